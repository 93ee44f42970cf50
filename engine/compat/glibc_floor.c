/* What lets libtandem load with glibc 2.28 (RHEL 8, Ubuntu 18.10) and later
 * while it is built with a newer one (Debian 12: 2.36, Debian 13: 2.41).
 *
 * A shared library records, for every glibc function it calls, the version
 * of that function in the glibc it was linked against. glibc 2.34 moved
 * libdl, libpthread and librt into libc and gave their functions a new
 * default version (GLIBC_2.34), and newer headers and libstdc++ call
 * functions older glibcs do not have at all. Linked as is, the engine
 * needed GLIBC_2.32-2.35 and would not load in a bullseye, Ubuntu 20.04 or
 * RHEL 8 image. So every call of such a function, in the engine and in the
 * static libstdc++ and libgcc linked into it, is redirected here
 * (`-Wl,--wrap=NAME`, the list in engine/meson.build), and from here:
 *
 * - to the function's old version, which every glibc since 2.2.5 (2.12 for
 *   pthread_setname_np) keeps: the engine then needs libdl.so.2,
 *   libpthread.so.0 and librt.so.1 (stubs in glibc >= 2.34) so that an old
 *   glibc finds those versions where they lived then;
 * - or to a replacement, for the functions 2.28 lacks:
 *   __libc_single_threaded (2.32), pthread_cond_clockwait (2.30),
 *   _dl_find_object (2.35, libgcc's unwinder), arc4random (2.36).
 *
 * tests/build/check_glibc_floor.py fails the build's tests when a newer
 * version slips in (a new call, a newer libstdc++), naming the function.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#define HIDDEN __attribute__((visibility("hidden")))
#define OLD_VERSION(name, version) __asm__(".symver tandem_old_" #name "," #name "@" version)

/* ---- functions that keep an old version ------------------------------- */

OLD_VERSION(dlopen, "GLIBC_2.2.5");
OLD_VERSION(dlsym, "GLIBC_2.2.5");
OLD_VERSION(dlerror, "GLIBC_2.2.5");
OLD_VERSION(dladdr, "GLIBC_2.2.5");
OLD_VERSION(dlinfo, "GLIBC_2.3.3");
OLD_VERSION(dlclose, "GLIBC_2.2.5");
void* tandem_old_dlopen(const char*, int);
void* tandem_old_dlsym(void*, const char*);
char* tandem_old_dlerror(void);
int tandem_old_dladdr(const void*, Dl_info*);
int tandem_old_dlinfo(void*, int, void*);
int tandem_old_dlclose(void*);
HIDDEN void* __wrap_dlopen(const char* file, int mode) { return tandem_old_dlopen(file, mode); }
HIDDEN void* __wrap_dlsym(void* handle, const char* name) { return tandem_old_dlsym(handle, name); }
HIDDEN char* __wrap_dlerror(void) { return tandem_old_dlerror(); }
HIDDEN int __wrap_dladdr(const void* addr, Dl_info* info) { return tandem_old_dladdr(addr, info); }
HIDDEN int __wrap_dlinfo(void* handle, int request, void* arg) {
  return tandem_old_dlinfo(handle, request, arg);
}
HIDDEN int __wrap_dlclose(void* handle) { return tandem_old_dlclose(handle); }

OLD_VERSION(shm_open, "GLIBC_2.2.5");
OLD_VERSION(shm_unlink, "GLIBC_2.2.5");
int tandem_old_shm_open(const char*, int, mode_t);
int tandem_old_shm_unlink(const char*);
HIDDEN int __wrap_shm_open(const char* name, int flags, mode_t mode) {
  return tandem_old_shm_open(name, flags, mode);
}
HIDDEN int __wrap_shm_unlink(const char* name) { return tandem_old_shm_unlink(name); }

OLD_VERSION(pthread_setname_np, "GLIBC_2.12");
int tandem_old_pthread_setname_np(pthread_t, const char*);
HIDDEN int __wrap_pthread_setname_np(pthread_t t, const char* name) {
  return tandem_old_pthread_setname_np(t, name);
}

/* The store's CPU time (tandem-run --store-stats): libpthread's before 2.34. */
OLD_VERSION(pthread_getcpuclockid, "GLIBC_2.2.5");
int tandem_old_pthread_getcpuclockid(pthread_t, clockid_t*);
HIDDEN int __wrap_pthread_getcpuclockid(pthread_t t, clockid_t* c) {
  return tandem_old_pthread_getcpuclockid(t, c);
}

/* libpthread's functions (libstdc++'s std::thread, thread_local, call_once). */
OLD_VERSION(pthread_create, "GLIBC_2.2.5");
OLD_VERSION(pthread_detach, "GLIBC_2.2.5");
OLD_VERSION(pthread_join, "GLIBC_2.2.5");
OLD_VERSION(pthread_once, "GLIBC_2.2.5");
OLD_VERSION(pthread_key_create, "GLIBC_2.2.5");
OLD_VERSION(__pthread_key_create, "GLIBC_2.2.5");
OLD_VERSION(pthread_key_delete, "GLIBC_2.2.5");
OLD_VERSION(pthread_getspecific, "GLIBC_2.2.5");
OLD_VERSION(pthread_setspecific, "GLIBC_2.2.5");
int tandem_old_pthread_create(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
int tandem_old_pthread_detach(pthread_t);
int tandem_old_pthread_join(pthread_t, void**);
int tandem_old_pthread_once(pthread_once_t*, void (*)(void));
int tandem_old_pthread_key_create(pthread_key_t*, void (*)(void*));
int tandem_old___pthread_key_create(pthread_key_t*, void (*)(void*));
int tandem_old_pthread_key_delete(pthread_key_t);
void* tandem_old_pthread_getspecific(pthread_key_t);
int tandem_old_pthread_setspecific(pthread_key_t, const void*);
HIDDEN int __wrap_pthread_create(pthread_t* t, const pthread_attr_t* a, void* (*fn)(void*),
                                 void* arg) {
  return tandem_old_pthread_create(t, a, fn, arg);
}
HIDDEN int __wrap_pthread_detach(pthread_t t) { return tandem_old_pthread_detach(t); }
HIDDEN int __wrap_pthread_join(pthread_t t, void** out) { return tandem_old_pthread_join(t, out); }
HIDDEN int __wrap_pthread_once(pthread_once_t* once, void (*fn)(void)) {
  return tandem_old_pthread_once(once, fn);
}
HIDDEN int __wrap_pthread_key_create(pthread_key_t* k, void (*d)(void*)) {
  return tandem_old_pthread_key_create(k, d);
}
/* libstdc++ takes this weak reference's presence to mean "threads may run". */
HIDDEN int __wrap___pthread_key_create(pthread_key_t* k, void (*d)(void*)) {
  return tandem_old___pthread_key_create(k, d);
}
HIDDEN int __wrap_pthread_key_delete(pthread_key_t k) { return tandem_old_pthread_key_delete(k); }
HIDDEN void* __wrap_pthread_getspecific(pthread_key_t k) {
  return tandem_old_pthread_getspecific(k);
}
HIDDEN int __wrap_pthread_setspecific(pthread_key_t k, const void* v) {
  return tandem_old_pthread_setspecific(k, v);
}

/* Before 2.33 the stat family were inline wrappers of __fxstat64 & co. */
OLD_VERSION(__fxstat64, "GLIBC_2.2.5");
OLD_VERSION(__xstat64, "GLIBC_2.2.5");
OLD_VERSION(__lxstat64, "GLIBC_2.2.5");
OLD_VERSION(__fxstatat64, "GLIBC_2.4");
int tandem_old___fxstat64(int, int, struct stat64*);
int tandem_old___xstat64(int, const char*, struct stat64*);
int tandem_old___lxstat64(int, const char*, struct stat64*);
int tandem_old___fxstatat64(int, int, const char*, struct stat64*, int);
enum { kStatVersion = 1 }; /* _STAT_VER_LINUX on x86_64 */
HIDDEN int __wrap_fstat64(int fd, struct stat64* st) {
  return tandem_old___fxstat64(kStatVersion, fd, st);
}
HIDDEN int __wrap_stat64(const char* path, struct stat64* st) {
  return tandem_old___xstat64(kStatVersion, path, st);
}
HIDDEN int __wrap_lstat64(const char* path, struct stat64* st) {
  return tandem_old___lxstat64(kStatVersion, path, st);
}
HIDDEN int __wrap_fstatat64(int dir, const char* path, struct stat64* st, int flags) {
  return tandem_old___fxstatat64(kStatVersion, dir, path, st, flags);
}

/* Since 2.33 fstat is a function of its own (libstdc++'s basic_file). */
OLD_VERSION(__fxstat, "GLIBC_2.2.5");
int tandem_old___fxstat(int, int, struct stat*);
HIDDEN int __wrap_fstat(int fd, struct stat* st) {
  return tandem_old___fxstat(kStatVersion, fd, st);
}

/* glibc 2.38 (Debian 13) gives C2X's strtol family and sscanf, which also
   take a 0b prefix and %b, new names, and _GNU_SOURCE (always on in g++)
   selects them; libstdc++ 14 calls them too. The C99 functions, which every
   glibc keeps, parse everything the engine reads (no binary numbers): the
   same functions as in a build with an older glibc. */
OLD_VERSION(strtol, "GLIBC_2.2.5");
OLD_VERSION(strtoll, "GLIBC_2.2.5");
OLD_VERSION(strtoul, "GLIBC_2.2.5");
OLD_VERSION(strtoull, "GLIBC_2.2.5");
OLD_VERSION(__isoc99_vsscanf, "GLIBC_2.7");
long tandem_old_strtol(const char*, char**, int);
long long tandem_old_strtoll(const char*, char**, int);
unsigned long tandem_old_strtoul(const char*, char**, int);
unsigned long long tandem_old_strtoull(const char*, char**, int);
int tandem_old___isoc99_vsscanf(const char*, const char*, va_list);
HIDDEN long __wrap___isoc23_strtol(const char* s, char** end, int base) {
  return tandem_old_strtol(s, end, base);
}
HIDDEN long long __wrap___isoc23_strtoll(const char* s, char** end, int base) {
  return tandem_old_strtoll(s, end, base);
}
HIDDEN unsigned long __wrap___isoc23_strtoul(const char* s, char** end, int base) {
  return tandem_old_strtoul(s, end, base);
}
HIDDEN unsigned long long __wrap___isoc23_strtoull(const char* s, char** end, int base) {
  return tandem_old_strtoull(s, end, base);
}
HIDDEN int __wrap___isoc23_sscanf(const char* s, const char* format, ...) {
  va_list args;
  va_start(args, format);
  int n = tandem_old___isoc99_vsscanf(s, format, args);
  va_end(args);
  return n;
}

/* glibc 2.29 gave exp and log new versions that no longer set errno through
   the SVID wrapper; the autotuner's Gaussian process calls both. The old
   versions, which every glibc keeps, compute the same values. */
OLD_VERSION(exp, "GLIBC_2.2.5");
OLD_VERSION(log, "GLIBC_2.2.5");
double tandem_old_exp(double);
double tandem_old_log(double);
HIDDEN double __wrap_exp(double x) { return tandem_old_exp(x); }
HIDDEN double __wrap_log(double x) { return tandem_old_log(x); }

/* ---- functions glibc 2.28 does not have -------------------------------- */

/* libstdc++ skips atomic reference counting while this says the process is
   single-threaded; 0 ("maybe not") is always correct, only slower. */
HIDDEN char __wrap___libc_single_threaded = 0;

/* std::condition_variable's waits on the steady clock. The engine's
   condition variables use the default (realtime) clock, so a monotonic
   deadline becomes the realtime instant the same distance away. */
HIDDEN int __wrap_pthread_cond_clockwait(pthread_cond_t* cond, pthread_mutex_t* mutex,
                                         clockid_t clock, const struct timespec* abstime) {
  if (clock == CLOCK_REALTIME) return pthread_cond_timedwait(cond, mutex, abstime);
  if (clock != CLOCK_MONOTONIC) return EINVAL;
  struct timespec now_clock, now_real, deadline;
  clock_gettime(CLOCK_MONOTONIC, &now_clock);
  clock_gettime(CLOCK_REALTIME, &now_real);
  int64_t left = (int64_t)(abstime->tv_sec - now_clock.tv_sec) * 1000000000 +
                 (abstime->tv_nsec - now_clock.tv_nsec);
  if (left < 0) left = 0;
  int64_t ns = now_real.tv_nsec + left % 1000000000;
  deadline.tv_sec = now_real.tv_sec + left / 1000000000 + ns / 1000000000;
  deadline.tv_nsec = ns % 1000000000;
  return pthread_cond_timedwait(cond, mutex, &deadline);
}

/* std::random_device (arc4random in glibc 2.36): the kernel's generator,
   which is what glibc's arc4random reads too. */
HIDDEN uint32_t __wrap_arc4random(void) {
  uint32_t value = 0;
  size_t got = 0;
  while (got < sizeof(value)) {
    ssize_t n = getrandom((char*)&value + got, sizeof(value) - got, 0);
    if (n > 0) got += (size_t)n;
    else if (n < 0 && errno != EINTR) abort(); /* as glibc's arc4random: it never fails */
  }
  return value;
}

/* libgcc's unwinder finds the unwind tables of the code that threw with
   _dl_find_object when the glibc it was built for has it, and then never
   falls back. Found here with dl_iterate_phdr, as libgcc did before. */
struct find_object_search {
  uintptr_t pc;
  struct dl_find_object* out;
  int found;
};

static int find_object_in(struct dl_phdr_info* info, size_t size, void* arg) {
  (void)size;
  struct find_object_search* s = arg;
  uintptr_t start = UINTPTR_MAX, end = 0;
  const void* eh_frame = NULL;
  int contains = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD) {
      if (lo < start) start = lo;
      if (lo + ph->p_memsz > end) end = lo + ph->p_memsz;
      if (s->pc >= lo && s->pc < lo + ph->p_memsz) contains = 1;
    } else if (ph->p_type == PT_GNU_EH_FRAME) {
      eh_frame = (const void*)lo;
    }
  }
  if (!contains) return 0;
  s->out->dlfo_flags = 0;
  s->out->dlfo_map_start = (void*)start;
  s->out->dlfo_map_end = (void*)end;
  s->out->dlfo_link_map = NULL;
  s->out->dlfo_eh_frame = (void*)eh_frame;
  s->found = 1;
  return 1;
}

HIDDEN int __wrap__dl_find_object(void* pc, struct dl_find_object* out) {
  struct find_object_search s = {(uintptr_t)pc, out, 0};
  dl_iterate_phdr(find_object_in, &s);
  return s.found ? 0 : -1;
}
