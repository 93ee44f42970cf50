// srun's part of --horovod=elastic (docs/elastic.md).
//
// The first elastic step of a job runs the membership service
// (engine/elastic/service.h) on a thread of its srun: srun lives as long as
// the step, whichever of its tasks or nodes fail, so the service outlives
// every rank. The tasks reach it at the address srun itself is reached at
// from their nodes (SLURM_SRUN_COMM_HOST, exported by slurmstepd) and the
// port given here (TANDEM_ELASTIC_PORT), with a fresh random token
// (TANDEM_ELASTIC_TOKEN).
//
// A later elastic step of the same job (srun --jobid=J --overlap
// --horovod=elastic on spare nodes) runs no service: it finds the first
// one through a file the service writes once the first rank has reached it
// (address, port, token; mode 0600 under TANDEM_ELASTIC_DIR, default
// $HOME/.tandem/elastic, named after the cluster and the job) and gives its
// tasks the full address (TANDEM_ELASTIC_ADDR), so they join the running
// job as new processes. srun removes the file when its service stops.
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace tandem {
namespace elastic {
class MembershipService;
}
}  // namespace tandem

namespace tandem::plugin {

// The file naming a job's service: "<dir>/<cluster>.<job id>".
std::string elastic_job_file(const std::string& dir, const std::string& cluster, uint32_t job_id);

// "host port token" -> its parts; nullopt for anything else.
struct ServiceAddress {
  std::string host;
  uint16_t port = 0;
  std::string token;
};
std::optional<ServiceAddress> parse_service_address(const std::string& text);
std::string format_service_address(const ServiceAddress& a);

// What srun holds for an elastic step.
class ElasticJob {
 public:
  // Starts the service for `tasks` ranks of the first step, or finds the
  // running one of the job, and sets the variables srun passes to the tasks.
  // Throws PluginError.
  ElasticJob(uint32_t job_id, uint32_t step_id, uint32_t tasks);
  ~ElasticJob();  // stops the service (if this srun runs it), removes the file
  ElasticJob(const ElasticJob&) = delete;
  ElasticJob& operator=(const ElasticJob&) = delete;

  // One line on how the elastic job went, or empty for a joining step.
  std::string summary() const;

 private:
  std::unique_ptr<elastic::MembershipService> service_;
  std::string file_;
};

}  // namespace tandem::plugin
