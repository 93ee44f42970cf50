// slurmstepd (S_CTX_REMOTE): sets up each task of an enabled user step.
//
// slurm_spank_task_init runs in the task, after Slurm's own task, gres and
// MPI (PMIx) set-up and just before exec, so the environment written here is
// the task's and CUDA_VISIBLE_DEVICES/PMIX_RANK are already there. Elastic
// tasks also get the membership service's address (export_elastic).
#include "common/log.h"
#include "container_env.h"
#include "identity.h"
#include "node_facts.h"
#include "plugin_error.h"
#include "plugin_log.h"
#include "plugin_state.h"
#include "spank_task_env.h"
#include "task_binding.h"
#include "task_setup.h"
#include "torch_env.h"

namespace tandem::plugin {
namespace {

// Batch script, extern, interactive and other special steps carry ids from
// 0xfffffff0 up (SLURM_BATCH_SCRIPT, SLURM_EXTERN_CONT, ...). They are not
// the user's parallel program and must not see the plugin.
constexpr uint32_t kFirstSpecialStep = 0xfffffff0u;

template <typename T>
T item(spank_t sp, spank_item_t what, const char* name) {
  T v{};
  const spank_err_t rc = spank_get_item(sp, what, &v);
  if (rc != ESPANK_SUCCESS) {
    throw PluginError(std::string("Slurm did not give ") + name + ": " + spank_strerror(rc));
  }
  return v;
}

StepLayout step_layout(spank_t sp, const TaskEnv& env) {
  StepLayout l;
  l.size = item<uint32_t>(sp, S_JOB_TOTAL_TASK_COUNT, "the step's task count");
  l.node_id = item<uint32_t>(sp, S_JOB_NODEID, "the node index");
  l.nnodes = item<uint32_t>(sp, S_JOB_NNODES, "the step's node count");
  const auto tpn = env.get("SLURM_STEP_TASKS_PER_NODE");
  if (!tpn) throw PluginError("SLURM_STEP_TASKS_PER_NODE is missing from the task environment");
  l.tasks_per_node = parse_tasks_per_node(*tpn);
  return l;
}

// An elastic task reaches the membership service in srun at the address
// srun is reached at from this node (slurmstepd exports it as
// SLURM_SRUN_COMM_HOST) and the port srun passed; a task of a later step
// gets the full address of the job's service (elastic_job.h). Its label is
// Horovod's "host[local_rank]", as in "node2[1] has been removed".
constexpr uint64_t kOrderPerStep = 1u << 20;  // tasks per step, at most

void export_elastic(const TaskIdentity& id, uint32_t step, TaskEnv& env) {
  if (!env.get("TANDEM_ELASTIC_ADDR")) {
    const auto host = env.get("SLURM_SRUN_COMM_HOST");
    const auto port = env.get("TANDEM_ELASTIC_PORT");
    if (!host || !port)
      throw PluginError(
          "--horovod=elastic: the task has no SLURM_SRUN_COMM_HOST or "
          "TANDEM_ELASTIC_PORT to reach the membership service in srun");
    const bool v6 = host->find(':') != std::string::npos;
    env.set("TANDEM_ELASTIC_ADDR", (v6 ? "[" + *host + "]" : *host) + ":" + *port);
  }
  env.set("TANDEM_NODE_NAME", id.hostname);
  // Horovod's marker of an elastic worker: DistributedOptimizer registers
  // its hooks at size 1 too, since the job may grow.
  env.set("HOROVOD_ELASTIC", "1");
  env.set("TANDEM_ELASTIC_LABEL", id.hostname + "[" + std::to_string(id.local_rank) + "]");
  // New processes of one generation get ranks in this order: generation 0's
  // ranks are the step's task ids, a later step's tasks come after.
  env.set("TANDEM_ELASTIC_ORDER", std::to_string(uint64_t{step} * kOrderPerStep + id.rank));
}

}  // namespace

// Once per step, in slurmstepd before it forks the tasks. Rank 0's node
// address is read from Slurm's configuration here, under Slurm's config lock,
// rather than in each forked task where another thread might have held that
// lock. The live topology is loaded here for all tasks: loading it is slow,
// and tasks of a node that each load it at once take several times as long
// to start (docs/binding.md, "In the plugin"); a failure to load it is left
// for each task's own load to report.
void remote_user_init(spank_t sp, PluginState& st) {
  if (!mode_enabled(st.mode())) return;
  const uint32_t step = item<uint32_t>(sp, S_JOB_STEPID, "the step id");
  if (step >= kFirstSpecialStep) return;
  SpankTaskEnv job_env(sp);  // the job's environment, which every task inherits
  configure_log(job_env, true);
  st.torch = torch_rendezvous(job_env, item<uint32_t>(sp, S_JOB_ID, "the job id"), step,
                              slurm_node_address);
  if (st.config.binding == "none" || !st.config.topology_xml.empty()) return;
  try {
    st.node_topology = planner::LoadedTopology::live_shared();
  } catch (const std::exception&) { st.node_topology.reset(); }
}

void remote_task_init(spank_t sp, PluginState& st) {
  const Mode mode = st.mode();
  if (!mode_enabled(mode)) return;
  if (item<uint32_t>(sp, S_JOB_STEPID, "the step id") >= kFirstSpecialStep) return;

  SpankTaskEnv env(sp);
  configure_log(env, true);
  const StepLayout layout = step_layout(sp, env);
  const uint32_t rank = item<uint32_t>(sp, S_TASK_GLOBAL_ID, "the task's rank");
  const uint32_t local_rank = static_cast<uint32_t>(item<int>(sp, S_TASK_ID, "the local task id"));
  const TaskIdentity id =
      compute_identity(layout, rank, local_rank, env.get("SLURMD_NODENAME").value_or(host_name()));
  log_to_task(static_cast<int>(rank), id.hostname);  // this process is the task from here on

  export_task(st.config, id, single_nic(), env);
  if (mode_elastic(mode))
    export_elastic(id, item<uint32_t>(sp, S_JOB_STEPID, "the step id") % 1024, env);
  const BindingResult binding =
      bind_task(st.config, id, env, st.node_topology ? &*st.node_topology : nullptr);
  if (!st.torch) throw PluginError("internal: torch.distributed's rendezvous was not prepared");
  export_torch_env(id, *st.torch, env);
  export_container_env(st.config, id, st.torch->master_addr,
                       item<uint32_t>(sp, S_JOB_ID, "the job id"),
                       item<uint32_t>(sp, S_JOB_STEPID, "the step id"), env);
  // --horovod=verbose's line is that option's output, in its own format
  // (docs/plugin.md); TANDEM_LOG=info gives the same facts as a log line.
  const bool info = TANDEM_LOG_ENABLED(kInfo, plugin);
  if (mode == Mode::kVerbose || info) {
    const std::string line = describe_task(id, env, allowed_cpus(), binding.summary);
    if (mode == Mode::kVerbose) task_stderr_line(line);
    else TANDEM_INFO(plugin, "%s", line.substr(line.find(": ") + 2).c_str());
  }
}

}  // namespace tandem::plugin
