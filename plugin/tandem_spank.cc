// Every symbol Slurm looks up in tandem_spank.so, and nothing else (see
// tandem_spank.map). Each hook switches on spank_context() and hands the work
// to the file for that context:
//   local.cc      srun             PMIx for enabled steps; for elastic ones
//                                  no-kill and the membership service
//                                  (elastic_job.cc), stopped at exit
//   (allocator)   sbatch/salloc    only the option (Slurm forwards its value
//                                  to every srun in the job as kOptionEnv)
//   remote.cc     slurmstepd       torch.distributed's rendezvous and the
//                                  node's topology once per step (user_init);
//                                  identity, injection, binding per task
// No exception leaves this file: each hook catches, logs one error (through
// slurm_error, plugin_log.h) and returns an error, which makes
// srun/sbatch/the step fail.
#include "spank_api.h"

#include <exception>
#include <string>
#include <vector>

#include "config.h"
#include "mode.h"
#include "plugin_error.h"
#include "plugin_log.h"
#include "plugin_state.h"

namespace tandem::plugin {
namespace {

template <typename F>
int guarded(const char* hook, F&& body) {
  try {
    install_log();
    body();
    return ESPANK_SUCCESS;
  } catch (const PluginError& e) {
    TANDEM_ERROR(plugin, "%s", e.what());
  } catch (const std::exception& e) {
    TANDEM_ERROR(plugin, "internal error in %s: %s", hook, e.what());
  } catch (...) { TANDEM_ERROR(plugin, "internal error in %s", hook); }
  return -1;
}

int on_horovod_option(int /*val*/, const char* optarg, int /*remote*/) {
  return guarded("--horovod", [optarg] {
    const std::string value = optarg ? optarg : "on";
    const auto mode = parse_mode(value);
    if (!mode) {
      throw PluginError("invalid value '" + value + "' for --horovod: expected one of " +
                        kModeValues);
    }
    plugin_state().option = *mode;
  });
}

spank_option horovod_option() {
  static char name[] = "horovod";
  static char arginfo[] = "on|off|verbose|elastic";
  static char usage[] =
      "Run the step as a Tandem (Horovod-style) data-parallel job: ranks, PMIx, "
      "engine preloaded; 'verbose' also prints one line per task; 'elastic' keeps the "
      "step alive when tasks or nodes fail (hvd.elastic scripts). Default: on when "
      "given without a value.";
  return spank_option{name, arginfo, usage, 2, 0, on_horovod_option};
}

}  // namespace
}  // namespace tandem::plugin

using namespace tandem::plugin;

#pragma GCC visibility push(default)
extern "C" {

// SPANK_PLUGIN(tandem, 1), spelled out: in C++ a namespace-scope const has
// internal linkage, so the macro's variables would not be exported.
extern const char plugin_name[] = "tandem";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;

int slurm_spank_init(spank_t sp, int ac, char** av) {
  return guarded("slurm_spank_init", [&] {
    const spank_context_t ctx = spank_context();
    // Strict only where the step turns out enabled (local_init_post_opt).
    if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR) configure_log_from_process_environment(false);
    PluginState& st = plugin_state();
    st.config = parse_config(std::vector<std::string>(av, av + ac));
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR) return;
    spank_option opt = horovod_option();
    const spank_err_t rc = spank_option_register(sp, &opt);
    if (rc != ESPANK_SUCCESS) {
      throw PluginError(std::string("could not register --horovod: ") + spank_strerror(rc));
    }
    if (ctx == S_CTX_LOCAL) local_init(sp, st);
  });
}

int slurm_spank_init_post_opt(spank_t sp, int /*ac*/, char** /*av*/) {
  return guarded("slurm_spank_init_post_opt", [&] {
    if (spank_context() == S_CTX_LOCAL) local_init_post_opt(sp, plugin_state());
  });
}

int slurm_spank_local_user_init(spank_t sp, int /*ac*/, char** /*av*/) {
  return guarded("slurm_spank_local_user_init", [&] {
    if (spank_context() == S_CTX_LOCAL) local_user_init(sp, plugin_state());
  });
}

int slurm_spank_exit(spank_t /*sp*/, int /*ac*/, char** /*av*/) {
  return guarded("slurm_spank_exit", [&] {
    if (spank_context() == S_CTX_LOCAL) local_exit(plugin_state());
  });
}

int slurm_spank_user_init(spank_t sp, int /*ac*/, char** /*av*/) {
  return guarded("slurm_spank_user_init", [&] {
    if (spank_context() == S_CTX_REMOTE) remote_user_init(sp, plugin_state());
  });
}

int slurm_spank_task_init(spank_t sp, int /*ac*/, char** /*av*/) {
  return guarded("slurm_spank_task_init", [&] {
    if (spank_context() == S_CTX_REMOTE) remote_task_init(sp, plugin_state());
  });
}

}  // extern "C"
#pragma GCC visibility pop
