/* Loads libtandem the way the plugin's LD_PRELOAD does, with CUDA and NCCL
 * hidden (the meson test points TANDEM_CUDA_LIBRARY/TANDEM_NCCL_LIBRARY at
 * nothing and clears LD_LIBRARY_PATH): it must load, answer, and say why the
 * GPU path is off. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s libtandem.so\n", argv[0]);
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    fprintf(stderr, "libtandem did not load without CUDA: %s\n", dlerror());
    return 1;
  }
  const char *(*version)(void) = (const char *(*)(void))dlsym(lib, "tandem_version");
  int (*gpu)(const char **) = (int (*)(const char **))dlsym(lib, "tandem_gpu_available");
  if (!version || !gpu) {
    fprintf(stderr, "missing C API symbols\n");
    return 1;
  }
  const char *reason = NULL;
  const int available = gpu(&reason);
  printf("tandem %s, gpu_available=%d: %s\n", version(), available, reason ? reason : "(null)");
  if (available != 0) {
    fprintf(stderr, "expected the GPU path to be off\n");
    return 1;
  }
  if (!reason || !strstr(reason, "not found")) {
    fprintf(stderr, "expected a 'not found' reason\n");
    return 1;
  }
  return 0;
}
