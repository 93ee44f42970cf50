// Which bootstrap a process gets, from its environment. Every variable read
// here is listed, with its default, in docs/bootstrap.md.
#include "bootstrap/from_environment.h"

#include <unistd.h>

#include "bootstrap/env.h"
#include "bootstrap/identity.h"
#include "bootstrap/node_domain.h"
#include "bootstrap/pmix_bootstrap.h"
#include "bootstrap/single_bootstrap.h"
#include "bootstrap/tcp_bootstrap.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/settings.h"

namespace tandem {

namespace {

enum class Kind { kAuto, kPmix, kTcp, kSingle };

// TANDEM_BOOTSTRAP: auto (default) | pmix | tcp | single.
Kind requested_kind() {
  auto v = env::get("TANDEM_BOOTSTRAP");
  if (!v || *v == "auto") return Kind::kAuto;
  note_setting("TANDEM_BOOTSTRAP", *v, "auto");
  if (*v == "pmix") return Kind::kPmix;
  if (*v == "tcp") return Kind::kTcp;
  if (*v == "single") return Kind::kSingle;
  throw BootstrapError("TANDEM_BOOTSTRAP='" + *v + "' is not one of auto, pmix, tcp, single");
}

// A PMIx launcher (srun --mpi=pmix, mpirun) marks its processes with these.
bool launched_by_pmix() { return env::get("PMIX_RANK") || env::get("PMIX_NAMESPACE"); }

bool tcp_requested() {
  return env::get("TANDEM_RENDEZVOUS_ADDR") || env::get("TANDEM_RANK") || env::get("TANDEM_SIZE");
}

// A launcher that starts several processes but serves no PMIx (MPICH's
// hydra, srun --mpi=pmi2, an Open MPI without its PMIx server) would leave
// every process a world of one that trains alone: that is an error instead,
// naming what Tandem joins through.
void refuse_launcher_without_pmix() {
  for (const char* var : {"PMI_SIZE", "OMPI_COMM_WORLD_SIZE"}) {
    const auto v = env::get(var);
    if (!v || *v == "1" || v->empty()) continue;
    throw BootstrapError(
        std::string("this process was started by a launcher that gives no PMIx (") + var + "=" +
        *v +
        " is set, PMIX_RANK and TANDEM_RENDEZVOUS_ADDR are not): Tandem joins a job through "
        "PMIx or its own rendezvous. Start it with srun --horovod=on, horovodrun, tandem-run "
        "or Open MPI's mpirun (which serves PMIx), or set TANDEM_BOOTSTRAP=single to run "
        "each process alone");
  }
}

std::unique_ptr<Bootstrap> tcp_from_environment() {
  auto addr = env::get("TANDEM_RENDEZVOUS_ADDR");
  auto size = env::get_int("TANDEM_SIZE");
  auto rank = env::get_int("TANDEM_RANK");
  auto token = env::get("TANDEM_RENDEZVOUS_TOKEN");
  std::string missing;
  if (!addr) missing += " TANDEM_RENDEZVOUS_ADDR";
  if (!rank) missing += " TANDEM_RANK";
  if (!size) missing += " TANDEM_SIZE";
  if (!token) missing += " TANDEM_RENDEZVOUS_TOKEN";
  if (!missing.empty())
    throw BootstrapError(
        "the TCP rendezvous needs TANDEM_RENDEZVOUS_ADDR, TANDEM_RENDEZVOUS_TOKEN, "
        "TANDEM_RANK and TANDEM_SIZE; not set:" +
        missing + " (use tandem-run, or set all four on every rank)");
  if (*rank >= *size)
    throw BootstrapError("TANDEM_RANK=" + std::to_string(*rank) +
                         " is not below TANDEM_SIZE=" + std::to_string(*size));
  if (token->size() < 8)
    throw BootstrapError(
        "TANDEM_RENDEZVOUS_TOKEN is shorter than 8 characters: use a random "
        "secret, e.g. $(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n')");
  TcpBootstrap::Options o;
  o.addr = parse_host_port(*addr, "TANDEM_RENDEZVOUS_ADDR");
  o.token = *token;
  o.rank = *rank;
  o.size = *size;
  o.node_name = node_name_from_environment();
  o.node_domain = node_local_domain();
  o.timeout = bootstrap_timeout();
  if (auto job = env::get("TANDEM_JOB_ID")) {
    if (!valid_job_id(*job))
      throw BootstrapError("TANDEM_JOB_ID='" + *job +
                           "' must be 1-64 characters of A-Z a-z 0-9 . _ -");
    o.job_id = *job;
  }
  auto serve = env::get("TANDEM_RENDEZVOUS_SERVE").value_or("rank0");
  if (serve != "rank0" && serve != "external")
    throw BootstrapError("TANDEM_RENDEZVOUS_SERVE='" + serve + "' is not one of rank0, external");
  if (serve != "rank0") note_setting("TANDEM_RENDEZVOUS_SERVE", serve, "rank0");
  o.host_store = serve == "rank0" && o.rank == 0;
  return std::make_unique<TcpBootstrap>(std::move(o));
}

// A SPANK plugin that replaces each task's environment with one task's after
// the tandem plugin ran leaves every rank with rank 0's identity. pyxis does
// this when it is listed after tandem in plugstack.conf: it enters the
// container in its task_init and imports the container's environment,
// created from the first task's, into every task, but keeps each task's own
// SLURM_PROCID. A disagreement is that, never a launcher's doing (tandem-run
// inside a step sets TANDEM_RENDEZVOUS_SERVE=external and is left alone).
void check_not_overwritten() {
  if (!env::get("TANDEM_NNODES") || env::get("TANDEM_RENDEZVOUS_SERVE") == std::string("external"))
    return;
  auto procid = env::get("SLURM_PROCID");
  if (!procid) return;
  for (const char* var : {"HOROVOD_RANK", "TANDEM_RANK"}) {
    auto v = env::get(var);
    if (!v || *v == *procid) continue;
    const bool pyxis = env::get("PYXIS_VERSION").has_value();
    throw BootstrapError(
        std::string(var) + "=" + *v + " but this task is Slurm's task " + *procid +
        " (SLURM_PROCID): " +
        (pyxis ? "pyxis replaced every task's variables with the first task's, because "
                 "tandem_spank.so is listed before pyxis (spank_pyxis.so) in plugstack.conf"
               : "a SPANK plugin that ran after tandem_spank.so replaced the task's variables") +
        ". The site must list tandem_spank.so after pyxis in plugstack.conf (docs/containers.md, "
        "\"pyxis and enroot\")");
  }
}

// Under srun --horovod the plugin gives every task both PMIx (srun's mpi/pmix)
// and the TCP store's variables (rank 0's node, a port, the step's secret).
// PMIx comes first; where it cannot work, inside a container whose image
// lacks a loadable libpmix or cannot see the PMIx server's directory, every
// task of the step fails the same way and all of them join through the
// store instead. A job whose launcher gave PMIx alone gets PMIx's error.
std::unique_ptr<Bootstrap> pmix_or_tcp() {
  try {
    return make_pmix_bootstrap(bootstrap_timeout());
  } catch (const UnsupportedError& e) {  // no loadable libpmix
    if (!tcp_requested()) throw BootstrapError(std::string("PMIx cannot be used: ") + e.what());
    pmix_unusable_reason() = e.what();
  } catch (const PmixInitError& e) {  // no PMIx server answered
    if (!tcp_requested()) throw;
    pmix_unusable_reason() = e.what();
  }
  try {
    return tcp_from_environment();
  } catch (const Error& e) {
    throw BootstrapError(
        "PMIx could not be used (" + pmix_unusable_reason() +
        ") and the TCP store the plugin set up could not be joined either: " + e.what());
  }
}

// The node as the log names it: Slurm's node name (the plugin's
// HOROVOD_HOSTNAME, SLURMD_NODENAME) rather than a container's host name.
std::string log_node_name() {
  if (auto v = env::get("HOROVOD_HOSTNAME")) return *v;
  try {
    return node_name_from_environment();
  } catch (const Error&) { return "?"; }
}

// In auto mode a PMIx launch may fall back to the TCP store (pmix_or_tcp); a
// bootstrap named by TANDEM_BOOTSTRAP is that one or an error.
std::unique_ptr<Bootstrap> join(Kind kind, bool fall_back) {
  switch (kind) {
    case Kind::kPmix: return fall_back ? pmix_or_tcp() : make_pmix_bootstrap(bootstrap_timeout());
    case Kind::kTcp: return tcp_from_environment();
    default: return std::make_unique<SingleBootstrap>();
  }
}

}  // namespace

std::string& pmix_unusable_reason() {
  static auto* reason = new std::string;
  return *reason;
}

std::unique_ptr<Bootstrap> bootstrap_from_environment() {
  bootstrap_timeout();  // a bad TANDEM_BOOTSTRAP_TIMEOUT is an error even for a world of one
  pmix_unusable_reason().clear();
  const Kind requested = requested_kind();
  Kind kind = requested;
  std::string why = "TANDEM_BOOTSTRAP";
  if (kind == Kind::kAuto) {
    check_not_overwritten();
    if (launched_by_pmix()) kind = Kind::kPmix, why = "PMIX_RANK set by the launcher";
    else if (tcp_requested()) kind = Kind::kTcp, why = "TANDEM_RENDEZVOUS_ADDR and friends set";
    else {
      refuse_launcher_without_pmix();
      kind = Kind::kSingle, why = "neither PMIx nor rendezvous variables set";
    }
  }
  static const char* const names[] = {"auto", "PMIx", "the TCP store", "a world of one"};
  const char* how = names[static_cast<int>(kind)];
  TANDEM_DEBUG(bootstrap, "joining through %s (%s)", how, why.c_str());
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<Bootstrap> b = join(kind, requested == Kind::kAuto);
  const Identity& id = b->identity();
  log::set_identity(id.rank, log_node_name());
  std::string through = how;
  if (!pmix_unusable_reason().empty()) {
    through = "the TCP store";
    why = "PMIx unusable: " + pmix_unusable_reason();
  }
  if (through == "the TCP store") through += " at " + *env::get("TANDEM_RENDEZVOUS_ADDR");
  TANDEM_INFO(
      bootstrap,
      "joined through %s (%s) in %.0f ms: rank %d of %d, node %d of %d, "
      "local rank %d of %d, job %s",
      through.c_str(), why.c_str(),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(),
      id.rank, id.size, id.cross_rank, id.cross_size, id.local_rank, id.local_size,
      id.job_id.c_str());
  return b;
}

}  // namespace tandem
