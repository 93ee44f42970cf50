// tandem-whoami: prints the identity the Tandem plugin gave this task, in one
// line, and whether the engine is already loaded in the process (preloaded by
// the plugin). The README's demo runs it under srun --horovod=verbose.
// Exits 1 when the task has no Tandem identity (the step was not enabled).
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "tool_log.h"

namespace {

const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : fallback;
}

}  // namespace

int main() {
  if (!tandem::tools::start_log("tandem-whoami")) return 2;
  if (!std::getenv("HOROVOD_RANK")) {
    TANDEM_ERROR(tools, "HOROVOD_RANK is not set: run under srun --horovod=on");
    return 1;
  }
  // The symbol resolves only if libtandem is already in the process.
  using VersionFn = const char* (*)();
  const auto version = reinterpret_cast<VersionFn>(dlsym(RTLD_DEFAULT, "tandem_version"));
  std::printf("rank %s/%s on %s: local %s/%s, cross %s/%s, pmix rank %s, gpus %s, engine %s\n",
              env_or("HOROVOD_RANK", "?"), env_or("HOROVOD_SIZE", "?"),
              env_or("HOROVOD_HOSTNAME", "?"), env_or("HOROVOD_LOCAL_RANK", "?"),
              env_or("HOROVOD_LOCAL_SIZE", "?"), env_or("HOROVOD_CROSS_RANK", "?"),
              env_or("HOROVOD_CROSS_SIZE", "?"), env_or("PMIX_RANK", "none"),
              env_or("CUDA_VISIBLE_DEVICES", "none"), version ? version() : "not loaded");
  return 0;
}
