// The plugin's side of the one log (common/log.h): TANDEM_LOG and
// TANDEM_LOG_SUBSYS as the user set them, and lines that end where the user
// sees them:
//   srun, sbatch, salloc   Slurm's slurm_error / slurm_info (srun prints them)
//   slurmstepd             slurm_error / slurm_info (the node's slurmd log)
//   a task (task_init)     the task's stderr, which srun forwards, with the
//                          task's rank in the prefix ("tandem[r3 node2]")
// Errors read "tandem: <message>", as every plugin message always has.
#pragma once

#include <string>

#include "common/log.h"
#include "task_env.h"

namespace tandem::plugin {

// The log's configuration from `env` (plugin core, tested without Slurm).
// Throws PluginError naming the variable and the bad value.
log::Config log_config_from(const TaskEnv& env);

// Sends the plugin's lines to Slurm, at the default level (warnings and
// errors) until configure_log; first thing in every hook. Idempotent.
void install_log();
// Reads the log variables from `env` (the job's environment in slurmstepd,
// the process's in srun). A bad value throws PluginError naming it when
// `strict` (a step with --horovod on: it stops at srun), else keeps the
// defaults (a step without Tandem must not fail for Tandem's variables).
void configure_log(const TaskEnv& env, bool strict);
void configure_log_from_process_environment(bool strict);
// From now on this process is the task (slurm_spank_task_init): lines go to
// its stderr, prefixed with its rank and node.
void log_to_task(int rank, const std::string& node);
// One line on the task's stderr, as is (--horovod=verbose's line).
void task_stderr_line(const std::string& line);

}  // namespace tandem::plugin
