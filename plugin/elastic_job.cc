#include "elastic_job.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap/identity.h"
#include "bootstrap/socket.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/settings.h"
#include "elastic/service.h"
#include "plugin_error.h"

namespace tandem::plugin {

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string elastic_dir() {
  if (const auto d = env_value("TANDEM_ELASTIC_DIR")) return *d;
  const char* home = std::getenv("HOME");
  if (!home || !*home)
    throw PluginError(
        "--horovod=elastic: neither TANDEM_ELASTIC_DIR nor HOME is set: set "
        "TANDEM_ELASTIC_DIR to a folder of yours that srun can write");
  return std::string(home) + "/.tandem/elastic";
}

void make_private_dir(const std::string& path) {
  std::string partial;
  std::stringstream parts(path);
  std::string item;
  while (std::getline(parts, item, '/')) {
    if (item.empty()) {
      partial = "/";
      continue;
    }
    partial += (partial.empty() || partial.back() == '/' ? "" : "/") + item;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      throw PluginError("--horovod=elastic: cannot make " + partial + ": " + std::strerror(errno) +
                        " (set TANDEM_ELASTIC_DIR to a folder srun can write)");
  }
}

// Writes the file whole or not at all (a later srun never reads half of it).
void write_private_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;  // a later step will not find the job: said in docs/elastic.md
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) ::unlink(tmp.c_str());
}

bool service_answers(const ServiceAddress& a) {
  try {
    tandem::HostPort hp{a.host, a.port};
    tandem::connect_until(hp, tandem::Clock::now() + std::chrono::seconds(2));
    return true;
  } catch (const tandem::Error&) { return false; }
}

void export_to_tasks(const char* name, const std::string& value) {
  // srun passes its own environment to the tasks it launches next.
  if (::setenv(name, value.c_str(), 1) != 0)
    throw PluginError(std::string("could not set ") + name + " for --horovod=elastic");
}

// Ends the step from srun, through the libslurm srun runs on (no link to it:
// the plugin loads into srun and slurmstepd, which carry it).
void end_step(uint32_t job_id, uint32_t step_id) {
  using Kill = int (*)(uint32_t, uint32_t, uint16_t);
  auto kill = reinterpret_cast<Kill>(dlsym(RTLD_DEFAULT, "slurm_kill_job_step"));
  if (!kill || kill(job_id, step_id, SIGKILL) != 0)
    TANDEM_ERROR(plugin, "could not end step %u.%u: scancel it", job_id, step_id);
}

}  // namespace

std::string elastic_job_file(const std::string& dir, const std::string& cluster, uint32_t job_id) {
  return dir + "/" + cluster + "." + std::to_string(job_id);
}

std::optional<ServiceAddress> parse_service_address(const std::string& text) {
  std::istringstream in(text);
  ServiceAddress a;
  unsigned port = 0;
  std::string rest;
  if (!(in >> a.host >> port >> a.token) || (in >> rest) || port == 0 || port > 65535 ||
      a.token.size() < 8)
    return std::nullopt;
  a.port = static_cast<uint16_t>(port);
  return a;
}

std::string format_service_address(const ServiceAddress& a) {
  return a.host + " " + std::to_string(a.port) + " " + a.token + "\n";
}

ElasticJob::ElasticJob(uint32_t job_id, uint32_t step_id, uint32_t tasks) {
  const std::string dir = elastic_dir();
  const std::string file = elastic_job_file(dir, env_or("SLURM_CLUSTER_NAME", "cluster"), job_id);
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (auto running = parse_service_address(text); running && service_answers(*running)) {
    // A later step: its tasks join the running job.
    export_to_tasks("TANDEM_ELASTIC_ADDR", tandem::HostPort{running->host, running->port}.str());
    export_to_tasks("TANDEM_ELASTIC_TOKEN", running->token);
    return;
  }
  tandem::elastic::ServiceSettings settings;
  try {
    settings = tandem::elastic::ServiceSettings::from_environment();
  } catch (const tandem::Error& e) {
    throw PluginError(std::string("--horovod=elastic: ") + e.what());
  }
  settings.expected = static_cast<int>(tasks);
  settings.token = tandem::random_job_id("tok") + tandem::random_job_id("en");  // 128 bits
  make_private_dir(dir);
  const std::string token = settings.token;
  settings.on_reached = [file, token](const std::string& host, uint16_t port) {
    write_private_file(file, format_service_address({host, port, token}));
  };
  settings.on_finished = [job_id, step_id](int) { end_step(job_id, step_id); };
  try {
    service_ = std::make_unique<tandem::elastic::MembershipService>(std::move(settings));
  } catch (const tandem::Error& e) {
    throw PluginError(std::string("--horovod=elastic: cannot start the membership service: ") +
                      e.what());
  }
  file_ = file;
  export_to_tasks("TANDEM_ELASTIC_PORT", std::to_string(service_->port()));
  export_to_tasks("TANDEM_ELASTIC_TOKEN", token);
  ::unsetenv("TANDEM_ELASTIC_ADDR");
}

ElasticJob::~ElasticJob() {
  service_.reset();
  if (!file_.empty()) ::unlink(file_.c_str());
}

std::string ElasticJob::summary() const {
  if (!service_) return "";
  const auto s = service_->summary();
  if (s.generations == 0 && s.failure.empty()) return "";  // no rank used Tandem
  std::string out = "elastic job: " + std::to_string(s.generations) + " generation" +
                    (s.generations == 1 ? "" : "s") + ", the last of " + std::to_string(s.size) +
                    " ranks; " + std::to_string(s.done) + " processes finished, " +
                    std::to_string(s.lost) + " lost, " + std::to_string(s.removed) + " removed";
  if (!s.failure.empty()) out += "; failed: " + s.failure;
  return out;
}

}  // namespace tandem::plugin
