/* The Open MPI side of contrib/bench/step.sh: the bytes of one training step
 * (SMALL x SMALL_BYTES + LARGE x LARGE_BYTES of float32) reduced by ONE
 * fused MPI_Allreduce, the lower bound a fusing runtime aims at. Prints the
 * slowest rank's median and best time over the timed calls.
 *   mpirun -np 2 mpi-step-bench [-s 100] [-S 16K] [-l 10] [-L 4M] [-n 30] [-w 5] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t parse_size(const char* s) {
  char* end = NULL;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024.0;
  else if (*end == 'M' || *end == 'm') v *= 1048576.0;
  return (size_t)v;
}

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  size_t small = 100, large = 10, small_bytes = 16 << 10, large_bytes = 4 << 20;
  int steps = 30, warmup = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "-s")) small = (size_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-S")) small_bytes = parse_size(argv[i + 1]);
    else if (!strcmp(argv[i], "-l")) large = (size_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-L")) large_bytes = parse_size(argv[i + 1]);
    else if (!strcmp(argv[i], "-n")) steps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-w")) warmup = atoi(argv[i + 1]);
  }
  MPI_Init(&argc, &argv);
  int n, me;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const size_t count = (small * small_bytes + large * large_bytes) / 4;
  float* send = malloc(count * 4 + 4);
  float* recv = malloc(count * 4 + 4);
  for (size_t i = 0; i < count; ++i) send[i] = (float)(me + 1 + (int)(i % 7));
  double* t = malloc(sizeof(double) * (size_t)steps);
  double* slowest = malloc(sizeof(double) * (size_t)steps);
  for (int s = 0; s < warmup + steps; ++s) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (s >= warmup) t[s - warmup] = (MPI_Wtime() - t0) * 1e6;
  }
  int ok = 1, all_ok = 1;
  for (size_t i = 0; i < count; ++i)
    if (recv[i] != (float)(n * (n + 1) / 2 + n * (int)(i % 7))) {
      ok = 0;
      break;
    }
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(t, slowest, steps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  qsort(slowest, (size_t)steps, sizeof(double), cmp);
  if (me == 0)
    printf("mpi-fused np=%d tensors=1 bytes=%zu median_us=%.1f best_us=%.1f check=%s\n", n,
           count * 4, slowest[steps / 2], slowest[0], all_ok ? "ok" : "FAIL");
  free(send);
  free(recv);
  free(t);
  free(slowest);
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
