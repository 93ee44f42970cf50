/* The Open MPI side of contrib/bench/compare.sh: MPI_Allreduce (float32,
 * sum) over the same size sweep as tandem-bench, printing the same columns
 * (time is the slowest rank's mean per iteration; busbw is nccl-tests'
 * 2(n-1)/n * size / time) and checking the result. Options as
 * tandem-bench's: -b, -e, -f sizes; -n, -w iterations (default by size);
 * -i in place (MPI_IN_PLACE, as Horovod reduces its fusion buffer), as
 * tandem-bench -i: the buffer's values then grow from call to call on both
 * sides alike. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t parse_size(const char* s) {
  char* end = NULL;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024.0;
  else if (*end == 'M' || *end == 'm') v *= 1024.0 * 1024;
  else if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
  return (size_t)v;
}

int main(int argc, char** argv) {
  size_t min = 8, max = (size_t)256 << 20;
  double factor = 4;
  int fixed_iters = 0, fixed_warmup = -1, in_place = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "-i")) {
      in_place = 1;
      continue;
    }
    if (i + 1 >= argc) break;
    if (!strcmp(argv[i], "-b")) min = parse_size(argv[i + 1]);
    else if (!strcmp(argv[i], "-e")) max = parse_size(argv[i + 1]);
    else if (!strcmp(argv[i], "-f")) factor = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "-n")) fixed_iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "-w")) fixed_warmup = atoi(argv[i + 1]);
    ++i;
  }
  MPI_Init(&argc, &argv);
  int n, me;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (me == 0) {
    printf("# mpi-allreduce-bench: %d ranks%s\n", n, in_place ? ", in place" : "");
    printf("#%11s %12s %9s %8s %11s %12s %12s %6s\n", "size(B)", "count", "type", "redop",
           "time(us)", "algbw(GB/s)", "busbw(GB/s)", "check");
  }
  /* The same warm-up (at least 200 ms) as tandem-bench before the first size. */
  {
    float w[2] = {0, 0}, r[2];
    const double t0 = MPI_Wtime();
    for (double elapsed = 0; elapsed < 0.2;) {
      /* Batches of 20, not tandem-bench's 200: with more ranks than cores
         one call can last a scheduler slice, and 200 of them would overrun
         the warm-up. */
      for (int i = 0; i < 20; ++i) MPI_Allreduce(w, r, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double mine = MPI_Wtime() - t0;
      MPI_Allreduce(&mine, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
  }
  int all_ok = 1;
  for (double b = (double)min; b <= (double)max * 1.0001; b *= factor) {
    const size_t count = (size_t)b / 4, bytes = count * 4;
    float* send = malloc(bytes ? bytes : 4);
    float* recv = malloc(bytes ? bytes : 4);
    /* In place: recv holds the input and the result (send is unused). */
    const void* in = in_place ? MPI_IN_PLACE : send;
    float* fill = in_place ? recv : send;
    for (size_t i = 0; i < count; ++i) fill[i] = (float)(me + 1 + (int)(i % 7));
    MPI_Allreduce(in, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    int ok = 1;
    for (size_t i = 0; i < count; ++i)
      if (recv[i] != (float)(n * (n + 1) / 2 + n * (int)(i % 7))) {
        ok = 0;
        break;
      }
    int ok_all = 1;
    MPI_Allreduce(&ok, &ok_all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    size_t it = ((size_t)1 << 30) / (bytes ? bytes : 1);
    const int iters = fixed_iters > 0 ? fixed_iters : (int)(it < 5 ? 5 : it > 1000 ? 1000 : it);
    const int warmup = fixed_warmup >= 0 ? fixed_warmup : iters / 10 > 2 ? iters / 10 : 2;
    for (int i = 0; i < warmup; ++i)
      MPI_Allreduce(in, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i)
      MPI_Allreduce(in, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double mine = (MPI_Wtime() - t0) / iters, slowest = mine;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const double algbw = (double)bytes / slowest / 1e9;
    if (me == 0)
      printf("%12zu %12zu %9s %8s %11.2f %12.3f %12.3f %6s\n", bytes, count, "float32", "sum",
             slowest * 1e6, algbw, algbw * 2.0 * (n - 1) / n, ok_all ? "ok" : "FAIL");
    fflush(stdout);
    all_ok &= ok_all;
    free(send);
    free(recv);
  }
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
