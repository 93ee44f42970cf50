// THE SEAM for topology-aware binding (the hwloc planner in plugin/planner/).
//
// remote.cc calls bind_task() once per task, in slurm_spank_task_init, after
// the identity and the LD_PRELOAD/PYTHONPATH injection are in the task's
// environment and before the verbose line is printed. Everything the planner
// needs is here:
//   - config.topology_xml / config.binding (and any key the planner adds to
//     config.h and the table in config.cc),
//   - the task's identity (local rank and size, node, ...),
//   - the task environment: CUDA_VISIBLE_DEVICES as Slurm's gres/gpu set it,
//     and where the plan goes (CUDA_VISIBLE_DEVICES reordered,
//     NCCL_SOCKET_IFNAME/NCCL_IB_HCA, TANDEM_TCP_IFNAME),
//   - the calling process is the task itself (just before exec), so
//     sched_setaffinity(0, ...) binds it.
// It returns the one-phrase summary the verbose line shows. A planner error
// is a PluginError: the task fails with that message rather than running
// half bound.
#pragma once

#include <string>

#include "config.h"
#include "hwloc_loader.h"
#include "identity.h"
#include "task_env.h"

namespace tandem::plugin {

struct BindingResult {
  std::string summary;  // e.g. "binding: off (planner not integrated)"
};

// A live topology of the node loaded once before the tasks were forked
// (planner::LoadedTopology::live_shared), or null: bind_task then loads its own.
BindingResult bind_task(const Config& config, const TaskIdentity& id, TaskEnv& env,
                        const planner::LoadedTopology* node_topology = nullptr);

}  // namespace tandem::plugin
