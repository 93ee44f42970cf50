// What one loaded copy of the plugin remembers between SPANK hooks. Slurm
// calls the hooks as plain functions, so this is the one process-wide object;
// only the context files (local.cc, remote.cc), the log (plugin_log.cc)
// and the dispatch file (tandem_spank.cc) reach it.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "spank_api.h"

#include "config.h"
#include "elastic_job.h"
#include "hwloc_loader.h"
#include "mode.h"
#include "torch_env.h"

namespace tandem::plugin {

// The plugin's name in plugstack.conf messages and in Slurm's option
// variable SLURM_SPANK__SLURM_SPANK_OPTION_tandem_horovod.
inline constexpr const char* kPluginName = "tandem";
inline constexpr const char* kOptionEnv = "SLURM_SPANK__SLURM_SPANK_OPTION_tandem_horovod";

struct PluginState {
  Config config;
  // Set by the --horovod callback (command line, #SBATCH, or the variable
  // above, all of which Slurm routes through the callback).
  std::optional<Mode> option;
  // srun only: whether slurm_spank_init set SLURM_MPI_TYPE=pmix, and the MPI
  // type the user asked for explicitly (--mpi or SLURM_MPI_TYPE), if any.
  bool forced_pmix = false;
  std::optional<std::string> explicit_mpi;
  // srun only, --horovod=elastic: slurm_spank_init set the step up to
  // survive failures; local_user_init then starts (or finds) the job's
  // membership service, kept until srun exits.
  bool elastic_step = false;
  std::unique_ptr<ElasticJob> elastic;

  // slurmstepd only: torch.distributed's rendezvous for this step, found once
  // per node in slurm_spank_user_init (before the tasks are forked) and
  // exported into each task with the identity.
  std::optional<TorchRendezvous> torch;

  // slurmstepd only: the node's live topology, loaded once per step before
  // the tasks are forked (remote_user_init), for every task to cut to its
  // own cgroup instead of loading it again.
  std::optional<planner::LoadedTopology> node_topology;

  Mode mode() const { return option.value_or(config.default_mode); }
};

PluginState& plugin_state();

// Per-context work, called by the dispatch file (tandem_spank.cc). Each
// throws PluginError; the dispatch turns it into slurm_error + failure.
void local_init(spank_t sp, PluginState& st);
void local_init_post_opt(spank_t sp, PluginState& st);
void local_user_init(spank_t sp, PluginState& st);
void local_exit(PluginState& st);
void remote_user_init(spank_t sp, PluginState& st);
void remote_task_init(spank_t sp, PluginState& st);

}  // namespace tandem::plugin
