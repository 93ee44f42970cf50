/* tandem-whoami: prints the identity the Tandem plugin gave this task, in one
 * line, and whether the engine is already loaded in the process (preloaded by
 * the plugin). The README's demo runs it under srun --horovod=verbose.
 * Exits 1 when the task has no Tandem identity (the step was not enabled). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static const char *env_or(const char *name, const char *fallback) {
  const char *v = getenv(name);
  return (v && *v) ? v : fallback;
}

int main(void) {
  if (!getenv("HOROVOD_RANK")) {
    fprintf(stderr, "tandem-whoami: HOROVOD_RANK is not set: run under srun --horovod=on\n");
    return 1;
  }
  /* The symbol resolves only if libtandem is already in the process. */
  const char *(*version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "tandem_version");
  printf("rank %s/%s on %s: local %s/%s, cross %s/%s, pmix rank %s, gpus %s, engine %s\n",
         env_or("HOROVOD_RANK", "?"), env_or("HOROVOD_SIZE", "?"),
         env_or("HOROVOD_HOSTNAME", "?"), env_or("HOROVOD_LOCAL_RANK", "?"),
         env_or("HOROVOD_LOCAL_SIZE", "?"), env_or("HOROVOD_CROSS_RANK", "?"),
         env_or("HOROVOD_CROSS_SIZE", "?"), env_or("PMIX_RANK", "none"),
         env_or("CUDA_VISIBLE_DEVICES", "none"), version ? version() : "not loaded");
  return 0;
}
