// srun (S_CTX_LOCAL): makes an enabled step use PMIx, and end when a task
// fails (srun --kill-on-bad-exit, unless the user chose otherwise). An
// elastic step instead survives failed tasks and nodes, bootstraps without
// PMIx, and gets the job's membership service (elastic_job.h).
//
// srun reads SLURM_MPI_TYPE while it parses its options, before option
// callbacks or init_post_opt run, so slurm_spank_init predicts the final mode
// from srun's argv (srun_args.h), the #SBATCH variable and the site default,
// and sets SLURM_MPI_TYPE=pmix when the step will be enabled and the user
// named no MPI type. init_post_opt, which knows the real mode, then checks the
// prediction held: a step is never enabled without PMIx.
#include <cstdio>
#include <cstdlib>

#include "common/log.h"
#include "container_env.h"
#include "elastic_job.h"
#include "plugin_error.h"
#include "plugin_log.h"
#include "plugin_state.h"
#include "srun_args.h"

namespace tandem::plugin {
namespace {

// --horovod=elastic: the step must outlive a failed task (--kill-on-bad-exit=0)
// and a failed node (--no-kill), which srun reads from SLURM_KILL_BAD_EXIT
// and SLURM_NO_KILL with its options. PMIx is not forced: Slurm's PMIx server
// kills the whole step when one of its clients dies, so elastic ranks
// bootstrap over TCP through the membership service instead.
void elastic_init(const SrunArgs& args, PluginState& st) {
  const char* env_k = std::getenv("SLURM_KILL_BAD_EXIT");
  const std::string k = args.kill_on_bad_exit ? *args.kill_on_bad_exit : (env_k ? env_k : "0");
  if (k != "0")
    throw PluginError(
        "--horovod=elastic keeps the step alive when a task fails, but "
        "--kill-on-bad-exit=" +
        k +
        " (or SLURM_KILL_BAD_EXIT) asks srun to end it: "
        "drop --kill-on-bad-exit");
  if (setenv("SLURM_KILL_BAD_EXIT", "0", 1) != 0 || setenv("SLURM_NO_KILL", "set", 1) != 0)
    throw PluginError(
        "could not set SLURM_KILL_BAD_EXIT=0 and SLURM_NO_KILL=set for --horovod=elastic");
  st.elastic_step = true;
}

bool is_pmix(const std::string& mpi) { return mpi.rfind("pmix", 0) == 0; }

}  // namespace

void local_init(spank_t /*sp*/, PluginState& st) {
  const SrunArgs args = scan_srun_args(own_argv());
  std::optional<Mode> predicted;
  if (args.horovod) {
    predicted = parse_mode(*args.horovod);
  } else if (const char* v = std::getenv(kOptionEnv)) {
    predicted = parse_mode(v);
  }
  // A bad value is reported by the option callback; predict the default.
  const Mode mode = predicted.value_or(st.config.default_mode);

  if (args.mpi) {
    st.explicit_mpi = args.mpi;
  } else if (const char* v = std::getenv("SLURM_MPI_TYPE")) {
    st.explicit_mpi = std::string(v);
  }
  if (mode_elastic(mode)) return elastic_init(args, st);
  if (mode_enabled(mode) && !st.explicit_mpi) {
    if (setenv("SLURM_MPI_TYPE", "pmix", 1) != 0) {
      throw PluginError("could not set SLURM_MPI_TYPE=pmix for --horovod");
    }
    st.forced_pmix = true;
  }
  // The TCP store's secret, for steps whose tasks cannot reach PMIx (inside
  // a container): drawn here, once per step, and carried to every task in
  // srun's environment like SLURM_MPI_TYPE (container_env.h).
  if (mode_enabled(mode)) {
    if (setenv("TANDEM_RENDEZVOUS_TOKEN", random_token().c_str(), 1) != 0) {
      throw PluginError("could not set TANDEM_RENDEZVOUS_TOKEN for --horovod");
    }
  }
  // A rank that fails (an engine error: a lost, stopped or cut-off peer)
  // ends the step: srun kills the other tasks, a stopped one included, and
  // exits, so the allocation is given back. Read by srun with its options,
  // like SLURM_MPI_TYPE; an explicit -K/--kill-on-bad-exit (=0 too) or
  // SLURM_KILL_BAD_EXIT is the user's choice and stays.
  if (needs_kill_on_bad_exit(mode_enabled(mode), args, std::getenv("SLURM_KILL_BAD_EXIT"))) {
    if (setenv("SLURM_KILL_BAD_EXIT", "1", 1) != 0) {
      throw PluginError("could not set SLURM_KILL_BAD_EXIT=1 for --horovod");
    }
  }
}

void local_init_post_opt(spank_t /*sp*/, PluginState& st) {
  const Mode mode = st.mode();
  // A bad TANDEM_LOG stops a step with Tandem on here, an elastic one too
  // (srun runs its membership service, which logs).
  if (mode_enabled(mode)) configure_log_from_process_environment(true);
  if (mode_elastic(mode)) {
    if (!st.elastic_step)
      throw PluginError(
          "--horovod=elastic was seen too late to keep the step alive on failures "
          "(srun reads --no-kill and --kill-on-bad-exit first): put --horovod "
          "before the command");
    return;
  }
  if (!mode_enabled(mode)) return;
  if (st.elastic_step)
    throw PluginError(std::string("--horovod=") + mode_name(mode) +
                      " was read after an earlier --horovod=elastic had set the step up for "
                      "elastic mode: give --horovod once");
  if (st.explicit_mpi && !is_pmix(*st.explicit_mpi)) {
    throw PluginError(std::string("--horovod=") + mode_name(mode) +
                      " needs the PMIx MPI plugin, but MPI type '" + *st.explicit_mpi +
                      "' was asked for (--mpi or SLURM_MPI_TYPE): drop it or use --mpi=pmix");
  }
  if (!st.forced_pmix && !st.explicit_mpi) {
    throw PluginError(std::string("--horovod=") + mode_name(mode) +
                      " was seen too late to select PMIx (srun reads its MPI type first): "
                      "put --horovod before the command, or add --mpi=pmix");
  }
  TANDEM_DEBUG(plugin, "--horovod=%s: MPI type %s (%s)", mode_name(mode),
               st.explicit_mpi ? st.explicit_mpi->c_str() : "pmix",
               st.forced_pmix ? "set by the plugin" : "the user's");
}

// Once the job and step exist, before the tasks start: the membership
// service (or the running one of the job) and the variables for the tasks.
void local_user_init(spank_t sp, PluginState& st) {
  if (!mode_elastic(st.mode())) return;
  uint32_t job = 0, step = 0, tasks = 0;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &tasks) != ESPANK_SUCCESS)
    throw PluginError("--horovod=elastic: srun did not give the job id, step id and task count");
  st.elastic = std::make_unique<ElasticJob>(job, step, tasks);
}

void local_exit(PluginState& st) {
  if (!st.elastic) return;
  const std::string line = st.elastic->summary();
  st.elastic.reset();
  if (!line.empty()) TANDEM_LOG_ALWAYS(kInfo, elastic, line);  // the elastic job's summary
}

}  // namespace tandem::plugin
