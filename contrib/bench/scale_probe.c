/* One rank of the scale harness (contrib/bench/scale.sh), over the public C
 * API, started by `tandem-run --node-per-rank` so that every rank is its own
 * simulated node and every collective crosses TCP. Each rank measures
 *   main -> tandem_init returned -> first 1-float allreduce returned
 *   sockets it holds after init and at the end (/proc/self/fd), all fds
 *   an 8-byte and a 1 MiB allreduce (mean of SCALE_ITERS_SMALL, _LARGE)
 *   a runtime step: one named 8-byte allreduce enqueued and waited for,
 *     which negotiates a cycle (mean of SCALE_STEPS), with the runtime's
 *     cycles and negotiation counters over those steps
 * and rank 0 prints one line of key=value with the slowest rank's times
 * (launch_to_first_ms from SCALE_T0, ns since the epoch, taken by the
 * script just before tandem-run), the most sockets any rank held, and
 * counts.
 *
 * SCALE_NOFILE=n lowers this process's soft RLIMIT_NOFILE to n first (the
 * hard limit stays), to show that a job far larger than the limit starts.
 *
 * SCALE_KILL=v runs the failure drill instead: after the first allreduce
 * every rank loops 8-byte allreduces; rank v prints its time and SIGKILLs
 * itself at an agreed moment; every survivor prints when its allreduce
 * failed and the error, then exits. Survivors ignore SIGTERM (tandem-run
 * sends it when a rank dies, and SIGKILL 3 s later) so that the drill
 * times the engine noticing, not the launcher. */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <tandem/tandem.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(int rank, const char *what, const char *why) {
  fprintf(stderr, "scale-probe rank %d: %s failed: %s\n", rank, what, why);
  exit(1);
}

static long env_long(const char *name, long fallback) {
  const char *v = getenv(name);
  return v && *v ? strtol(v, NULL, 10) : fallback;
}

/* Sockets and all descriptors this process holds. */
static void count_fds(int *sockets, int *all) {
  *sockets = 0;
  *all = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return;
  struct dirent *e;
  char path[300], link[64];
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    ++*all;
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    const ssize_t n = readlink(path, link, sizeof link - 1);
    if (n > 0) {
      link[n] = 0;
      if (strncmp(link, "socket:", 7) == 0) ++*sockets;
    }
  }
  closedir(d);
  --*all; /* the directory's own descriptor */
}

static int allreduce(void *buf, size_t count) {
  return tandem_allreduce(buf, buf, count, TANDEM_FLOAT32, TANDEM_SUM, 1.0, 1.0);
}

static uint64_t counter(const char *want) {
  for (int i = 0;; ++i) {
    const char *name = NULL;
    uint64_t value = 0;
    if (tandem_runtime_counter(i, &name, &value) != TANDEM_SUCCESS) return 0;
    if (strcmp(name, want) == 0) return value;
  }
}

static void kill_drill(int rank, int size, int victim) {
  double when = now_s() + 1.0;
  if (tandem_broadcast(&when, 1, TANDEM_FLOAT64, 0) != TANDEM_SUCCESS)
    die(rank, "tandem_broadcast", tandem_last_error());
  if (rank != victim) signal(SIGTERM, SIG_IGN);
  float x[2] = {1, 1};
  for (long i = 0;; ++i) {
    const double t = now_s();
    if (rank == victim && t >= when) {
      printf("scale-kill victim=%d t=%.6f\n", rank, t);
      fflush(stdout);
      kill(getpid(), SIGKILL);
    }
    if (t > when + 120) {
      printf("scale-kill rank=%d no_failure_after_s=120\n", rank);
      fflush(stdout);
      _exit(1);
    }
    if (allreduce(x, 2) != TANDEM_SUCCESS) {
      const double failed = now_s();
      char why[200];
      snprintf(why, sizeof why, "%s", tandem_last_error());
      for (char *p = why; *p; ++p)
        if (*p == '\n') *p = ' ';
      printf("scale-kill rank=%d t=%.6f size=%d error=%s\n", rank, failed, size, why);
      fflush(stdout);
      _exit(0);
    }
  }
}

int main(void) {
  const double t_main = now_s();
  int rank = -1, size = 0;
  const long nofile = env_long("SCALE_NOFILE", 0);
  if (nofile > 0) {
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = (rlim_t)nofile;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) die(rank, "setrlimit", "refused");
  }
  if (tandem_init() != TANDEM_SUCCESS) die(rank, "tandem_init", tandem_last_error());
  const double t_init = now_s();
  tandem_rank(&rank);
  tandem_size(&size);
  float one = 1.0f;
  if (allreduce(&one, 1) != TANDEM_SUCCESS) die(rank, "first allreduce", tandem_last_error());
  const double t_first = now_s();
  if (one != (float)size) die(rank, "first allreduce", "wrong sum");
  int sockets_init, fds_init;
  count_fds(&sockets_init, &fds_init);

  const long victim = env_long("SCALE_KILL", -1);
  if (victim >= 0) kill_drill(rank, size, (int)victim);

  /* 8 bytes: two floats. */
  const long iters_small = env_long("SCALE_ITERS_SMALL", 20),
             iters_large = env_long("SCALE_ITERS_LARGE", 4);
  float small[2] = {1, 1};
  for (int i = 0; i < 2; ++i)
    if (allreduce(small, 2) != TANDEM_SUCCESS) die(rank, "allreduce 8 B", tandem_last_error());
  double t0 = now_s();
  for (long i = 0; i < iters_small; ++i)
    if (allreduce(small, 2) != TANDEM_SUCCESS) die(rank, "allreduce 8 B", tandem_last_error());
  const double us_small = (now_s() - t0) / (double)iters_small * 1e6;

  const size_t large_count = (size_t)1 << 18; /* 1 MiB of float32 */
  float *large = calloc(large_count, sizeof(float));
  if (!large) die(rank, "calloc", "out of memory");
  if (allreduce(large, large_count) != TANDEM_SUCCESS)
    die(rank, "allreduce 1 MiB", tandem_last_error());
  t0 = now_s();
  for (long i = 0; i < iters_large; ++i)
    if (allreduce(large, large_count) != TANDEM_SUCCESS)
      die(rank, "allreduce 1 MiB", tandem_last_error());
  const double ms_large = (now_s() - t0) / (double)iters_large * 1e3;
  free(large);

  /* A runtime step: one named tensor, negotiated every time (the first
   * step in full, the others through the response cache). */
  const long steps = env_long("SCALE_STEPS", 20), warm = 3;
  float in[2] = {1, 1}, out[2];
  const int64_t shape[1] = {2};
  tandem_tensor_t tensor = {"scale.step", in, out, TANDEM_FLOAT32, TANDEM_DEVICE_CPU, 1, shape};
  uint64_t cycles0 = 0, bytes0 = 0, messages0 = 0;
  for (long i = 0; i < steps + warm; ++i) {
    if (i == warm) {
      t0 = now_s();
      cycles0 = counter("cycles");
      bytes0 = counter("negotiation_bytes");
      messages0 = counter("message_rounds");
    }
    tandem_handle_t h;
    if (tandem_enqueue_allreduce(&tensor, TANDEM_SUM, 1.0, 1.0, TANDEM_GLOBAL_PROCESS_SET, &h) !=
        TANDEM_SUCCESS)
      die(rank, "tandem_enqueue_allreduce", tandem_last_error());
    if (tandem_handle_wait(h, -1) != TANDEM_SUCCESS) die(rank, "runtime step", tandem_last_error());
    tandem_handle_release(h);
  }
  const double us_step = (now_s() - t0) / (double)steps * 1e6;
  const double cycles = (double)(counter("cycles") - cycles0);
  const double neg_bytes = (double)(counter("negotiation_bytes") - bytes0);
  const double message_rounds = (double)(counter("message_rounds") - messages0);

  int sockets_end, fds_end;
  count_fds(&sockets_end, &fds_end);
  enum { kFields = 13 };
  double mine[kFields] = {t_init - t_main,
                          t_first - t_main,
                          t_first,
                          sockets_init,
                          sockets_end,
                          fds_end,
                          us_small,
                          ms_large,
                          us_step,
                          cycles,
                          cycles > 0 ? neg_bytes / cycles : 0,
                          t_main,
                          message_rounds};
  double *all = malloc(sizeof(mine) * (size_t)size);
  if (!all) die(rank, "malloc", "out of memory");
  if (tandem_allgather(mine, kFields, all, TANDEM_FLOAT64) != TANDEM_SUCCESS)
    die(rank, "tandem_allgather", tandem_last_error());
  if (rank == 0) {
    double max[kFields], sum[kFields], min_main = all[11];
    for (int k = 0; k < kFields; ++k) max[k] = sum[k] = 0;
    for (int r = 0; r < size; ++r)
      for (int k = 0; k < kFields; ++k) {
        const double v = all[kFields * r + k];
        if (v > max[k]) max[k] = v;
        sum[k] += v;
        if (k == 11 && v < min_main) min_main = v;
      }
    const char *t0s = getenv("SCALE_T0");
    const double launch = t0s && *t0s ? strtod(t0s, NULL) * 1e-9 : min_main;
    printf(
        "scale ranks=%d launch_to_first_ms=%.0f main_to_init_ms=%.0f main_to_first_ms=%.0f "
        "sockets_max=%.0f sockets_mean=%.1f sockets_end_max=%.0f fds_max=%.0f "
        "allreduce_8B_us=%.0f allreduce_1MiB_ms=%.1f step_us=%.0f cycles_per_step=%.2f "
        "message_rounds_per_step=%.2f negotiation_bytes_per_cycle=%.0f\n",
        size, (max[2] - launch) * 1e3, max[0] * 1e3, max[1] * 1e3, max[3], sum[3] / size, max[4],
        max[5], max[6], max[7], max[8], max[9] / (double)steps, max[12] / (double)steps, max[10]);
    fflush(stdout);
  }
  free(all);
  tandem_finalize();
  return 0;
}
