/* libtandem-preload.so: what the Slurm plugin puts on LD_PRELOAD.
 *
 * It is loaded into every program of a --horovod step: the shell, pip,
 * /bin/true, and inside a user's container every program of the image. A
 * preloaded library that cannot be loaded (a missing dependency, a glibc
 * symbol version the image lacks) makes ld.so stop every program with exit
 * 127, so the engine itself is never preloaded. This shim is, and it cannot
 * fail: it needs nothing but the C library and libdl, through symbols every
 * glibc since 2.2.5 has (checked at build time, tests/build/check_glibc_floor.py),
 * and it loads the engine with dlopen, which reports a failure instead of
 * ending the program. The program then runs as without Tandem, and the
 * Python package reads the reason (tandem_preload_error) to say at import
 * what is wrong and what to do.
 *
 * It also puts the site's Python packages on PYTHONPATH when they are not
 * there: some runtimes replace the job's PYTHONPATH with the image's own
 * (Apptainer with a Docker ENV PYTHONPATH), and the packages must be added
 * to the image's path without hiding it. Python reads PYTHONPATH after the
 * constructors of preloaded libraries have run.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#define TANDEM_PRELOAD_API __attribute__((visibility("default")))

/* glibc 2.34 gave libdl's functions a new default version; the old ones are
   what every glibc has (the build links libdl.so.2 for glibcs before 2.34,
   where they lived there). */
__asm__(".symver dlopen,dlopen@GLIBC_2.2.5");
__asm__(".symver dlerror,dlerror@GLIBC_2.2.5");
__asm__(".symver dladdr,dladdr@GLIBC_2.2.5");

static char preload_error[1024];

/* The reason the engine did not load, or NULL when it is loaded. */
TANDEM_PRELOAD_API const char* tandem_preload_error(void) {
  return preload_error[0] != '\0' ? preload_error : NULL;
}

static void set_error(const char* a, const char* b) {
  size_t n = strlen(a);
  if (n >= sizeof(preload_error)) n = sizeof(preload_error) - 1;
  memcpy(preload_error, a, n);
  size_t m = b != NULL ? strlen(b) : 0;
  if (m > sizeof(preload_error) - 1 - n) m = sizeof(preload_error) - 1 - n;
  if (m > 0) memcpy(preload_error + n, b, m);
  preload_error[n + m] = '\0';
}

/* The engine beside this file, for a preload without TANDEM_LIBRARY. */
static int engine_beside_me(char* out, size_t size) {
  Dl_info info;
  if (dladdr((void*)&tandem_preload_error, &info) == 0 || info.dli_fname == NULL) return 0;
  const char* slash = strrchr(info.dli_fname, '/');
  if (slash == NULL) return 0;
  size_t dir = (size_t)(slash - info.dli_fname) + 1;
  static const char name[] = "libtandem.so.0";
  if (dir + sizeof(name) > size) return 0;
  memcpy(out, info.dli_fname, dir);
  memcpy(out + dir, name, sizeof(name));
  return 1;
}

/* ':'-separated list contains entry. */
static int list_has(const char* list, const char* entry) {
  size_t n = strlen(entry);
  for (const char* p = list; p != NULL && *p != '\0';) {
    const char* end = strchr(p, ':');
    size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, entry, n) == 0) return 1;
    p = end != NULL ? end + 1 : NULL;
  }
  return 0;
}

static void add_python_path(void) {
  const char* dir = getenv("TANDEM_PYTHONPATH");
  if (dir == NULL || dir[0] == '\0') return;
  const char* path = getenv("PYTHONPATH");
  if (path != NULL && list_has(path, dir)) return;
  size_t a = strlen(dir), b = path != NULL ? strlen(path) : 0;
  char* joined = malloc(a + 1 + b + 1);
  if (joined == NULL) return;
  memcpy(joined, dir, a);
  if (b > 0) {
    joined[a] = ':';
    memcpy(joined + a + 1, path, b + 1);
  } else {
    joined[a] = '\0';
  }
  setenv("PYTHONPATH", joined, 1);
  free(joined);
}

__attribute__((constructor)) static void tandem_preload(void) {
  add_python_path();
  char beside[4096];
  const char* engine = getenv("TANDEM_LIBRARY");
  if (engine == NULL || engine[0] == '\0') {
    if (!engine_beside_me(beside, sizeof(beside))) {
      set_error("TANDEM_LIBRARY is not set and the preload's own path is unknown", NULL);
      return;
    }
    engine = beside;
  }
  /* RTLD_GLOBAL: the C API is then in the process's global scope, as if
     the engine itself had been preloaded (tandem-whoami, ctypes.CDLL(None)). */
  if (dlopen(engine, RTLD_NOW | RTLD_GLOBAL) == NULL) {
    const char* err = dlerror();
    set_error(err != NULL ? err : engine, err != NULL ? NULL : ": dlopen failed");
  }
}
