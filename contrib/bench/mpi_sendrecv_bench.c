/* Open MPI's side of tcp-bandwidth (tests/unit/tcp/tcp_bandwidth.cc): 2
 * ranks, both calling MPI_Sendrecv with each other at once, the traffic of
 * a 2-node allreduce's exchange step, so that the TCP paths themselves are
 * compared and not the algorithms above them. The same sizes argument
 * ("256K,1M,4M", or a largest MiB count for 1, 4, 16, ... MiB), the same
 * iterations per size (2 GiB / size, 5-20000) and columns: time per
 * sendrecv and GB/s per direction, rank 0's view.
 *   srun -N 2 -n 2 --mpi=pmix mpi-sendrecv-bench 256K,1M,4M */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t parse_size(const char* s, char** end) {
  size_t v = strtoul(s, end, 10);
  if (**end == 'K') v <<= 10, ++*end;
  else if (**end == 'M') v <<= 20, ++*end;
  return v;
}

int main(int argc, char** argv) {
  size_t sizes[64];
  int count = 0;
  const char* arg = argc > 1 ? argv[1] : "256";
  if (strpbrk(arg, ",KM")) {
    for (const char* at = arg; *at && count < 64;) {
      char* end = NULL;
      sizes[count++] = parse_size(at, &end);
      at = *end ? end + 1 : end;
    }
  } else {
    for (size_t mib = 1; mib <= strtoul(arg, NULL, 10) && count < 64; mib *= 4)
      sizes[count++] = mib << 20;
  }
  MPI_Init(&argc, &argv);
  int n, me;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (n != 2) {
    if (me == 0)
      fprintf(stderr, "mpi-sendrecv-bench: launched with %d ranks; it measures between 2\n", n);
    MPI_Finalize();
    return 2;
  }
  const int peer = 1 - me;
  if (me == 0) printf("%12s %14s %18s\n", "size (B)", "time (ms)", "GB/s per direction");
  for (int i = 0; i < count; ++i) {
    const size_t bytes = sizes[i];
    char* out = malloc(bytes ? bytes : 1);
    char* in = malloc(bytes ? bytes : 1);
    if (!out || !in) {
      fprintf(stderr,
              "mpi-sendrecv-bench: no memory for two buffers of %zu bytes: ask for smaller sizes\n",
              bytes);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(out, me, bytes);
    size_t iters = ((size_t)2 << 30) / (bytes ? bytes : 1);
    iters = iters < 5 ? 5 : iters > 20000 ? 20000 : iters;
    MPI_Sendrecv(out, (int)bytes, MPI_BYTE, peer, 0, in, (int)bytes, MPI_BYTE, peer, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* warm-up, as tcp-bandwidth */
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (size_t k = 0; k < iters; ++k)
      MPI_Sendrecv(out, (int)bytes, MPI_BYTE, peer, 0, in, (int)bytes, MPI_BYTE, peer, 0,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    const double s = (MPI_Wtime() - t0) / (double)iters;
    if (me == 0) printf("%12zu %14.4f %18.2f\n", bytes, s * 1e3, (double)bytes / s / 1e9);
    fflush(stdout);
    free(out);
    free(in);
  }
  MPI_Finalize();
  return 0;
}
