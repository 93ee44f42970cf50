/* Start-up cost of a job, for contrib/bench/startup.sh: each rank takes
 * timestamps (CLOCK_REALTIME, comparable across the namespace nodes of the
 * local cluster since they share one kernel) at
 *   exec   the process's start (/proc/self/stat starttime: when the launcher
 *          forked it, so its set-up of the task before exec counts; in
 *          clock ticks)
 *   main   entry to main (after the dynamic loader)
 *   init   tandem_init / MPI_Init returned
 *   done   the first allreduce (1 float32, sum) returned
 * Rank 0 gathers them with the library itself (after the measurement) and
 * prints one line: the slowest rank's exec->done, main->done, main->init,
 * and, when the launching script exported STARTUP_T0 (ns since the epoch,
 * taken just before srun/mpirun), launch->done.
 *
 * Built twice from this file (tools/meson.build): startup-probe over the
 * Tandem C API, mpi-startup-probe with -DSTARTUP_MPI over Open MPI. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef STARTUP_MPI
#include <mpi.h>
#define LIB "mpi"
#else
#include <tandem/tandem.h>
#define LIB "tandem"
#endif

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* starttime (field 22) is in clock ticks since boot; map it to
 * CLOCK_REALTIME through CLOCK_BOOTTIME, which counts from the same origin.
 * Returns a negative value if /proc cannot be read. */
static double exec_time(void) {
  char buf[4096];
  FILE *f = fopen("/proc/self/stat", "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strrchr(buf, ')'); /* the command name may hold spaces */
  if (!p) return -1;
  unsigned long long start = 0;
  /* after ") " come fields 3..; starttime is field 22 */
  if (sscanf(p + 2,
             "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
             &start) != 1)
    return -1;
  const double boot_now = clock_s(CLOCK_BOOTTIME), real_now = clock_s(CLOCK_REALTIME);
  return real_now - (boot_now - (double)start / (double)sysconf(_SC_CLK_TCK));
}

static void die(const char *what, const char *why) {
  fprintf(stderr, "startup-probe (%s): %s failed: %s\n", LIB, what, why);
  exit(1);
}

int main(int argc, char **argv) {
  const double t_main = clock_s(CLOCK_REALTIME);
  const double t_exec = exec_time();
  int rank = 0, size = 1;
  float one = 1.0f, sum = 0.0f;
#ifdef STARTUP_MPI
  MPI_Init(&argc, &argv);
  const double t_init = clock_s(CLOCK_REALTIME);
  MPI_Allreduce(&one, &sum, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  const double t_done = clock_s(CLOCK_REALTIME);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
#else
  (void)argc;
  (void)argv;
  if (tandem_init() != TANDEM_SUCCESS) die("tandem_init", tandem_last_error());
  const double t_init = clock_s(CLOCK_REALTIME);
  if (tandem_allreduce(&one, &sum, 1, TANDEM_FLOAT32, TANDEM_SUM, 1.0, 1.0) != TANDEM_SUCCESS)
    die("tandem_allreduce", tandem_last_error());
  const double t_done = clock_s(CLOCK_REALTIME);
  tandem_rank(&rank);
  tandem_size(&size);
#endif
  if (sum != (float)size) {
    fprintf(stderr, "startup-probe (%s): rank %d: allreduce gave %g, expected %d\n", LIB, rank, sum,
            size);
    return 1;
  }
  double mine[4] = {t_exec, t_main, t_init, t_done};
  double *all = malloc(sizeof(mine) * (size_t)size);
  if (!all) die("malloc", "out of memory");
#ifdef STARTUP_MPI
  MPI_Allgather(mine, 4, MPI_DOUBLE, all, 4, MPI_DOUBLE, MPI_COMM_WORLD);
#else
  if (tandem_allgather(mine, 4, all, TANDEM_FLOAT64) != TANDEM_SUCCESS)
    die("tandem_allgather", tandem_last_error());
#endif
  if (rank == 0) {
    double exec_done = 0, main_done = 0, main_init = 0, last_done = 0;
    for (int r = 0; r < size; ++r) {
      const double *t = all + 4 * r;
      if (t[0] > 0 && t[3] - t[0] > exec_done) exec_done = t[3] - t[0];
      if (t[3] - t[1] > main_done) main_done = t[3] - t[1];
      if (t[2] - t[1] > main_init) main_init = t[2] - t[1];
      if (t[3] > last_done) last_done = t[3];
    }
    const char *t0 = getenv("STARTUP_T0");
    double launch_done = -1;
    if (t0 && *t0) launch_done = last_done - strtod(t0, NULL) * 1e-9;
    printf(
        "%s ranks=%d exec_to_done_ms=%.1f main_to_done_ms=%.1f main_to_init_ms=%.1f "
        "launch_to_done_ms=%.1f\n",
        LIB, size, exec_done * 1e3, main_done * 1e3, main_init * 1e3, launch_done * 1e3);
    fflush(stdout);
  }
  free(all);
#ifdef STARTUP_MPI
  MPI_Finalize();
#else
  tandem_finalize();
#endif
  return 0;
}
