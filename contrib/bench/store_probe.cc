// What the copy-out of a large allreduce costs with normal and with
// non-temporal stores (shm/stream_copy.h), on this machine, in CPU time
// (CLOCK_THREAD_CPUTIME_ID, so other load only adds outliers: the minimum
// over the rounds is the figure): a buffer of SIZE MiB is walked 256 KiB
// at a time (the staged allreduce's step); each step is read into a
// staging buffer and written back
//   in place:     into the same lines it was read from (send == recv);
//   out of place: into a second buffer that nothing read (recv != send);
// with memcpy and with stream_copy, interleaved round by round.
//
//   build/tools/store-probe [SIZE_MIB...] [-n ROUNDS]     (default 16 64, 30)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "shm/stream_copy.h"

namespace {

double cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

char* pages(size_t bytes, int fill) {
  char* p = static_cast<char*>(std::aligned_alloc(4096, bytes));
  if (!p) {
    std::perror("aligned_alloc");
    std::exit(1);
  }
  std::memset(p, fill, bytes);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes;
  int rounds = 30;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "-n" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else sizes.push_back(static_cast<size_t>(std::atoi(argv[i])));
  }
  if (sizes.empty()) sizes = {16, 64};
  const size_t step = size_t{256} << 10;
  std::printf("# CPU ms per pass, minimum (median) of %d rounds; 256 KiB steps\n", rounds);
  std::printf("# %8s %22s %22s %22s %22s\n", "MiB", "in place, normal", "in place, non-temp.",
              "out of place, normal", "out of place, non-temp.");
  for (size_t mib : sizes) {
    const size_t bytes = std::max<size_t>(mib << 20, step);
    char* buf = pages(bytes, 1);
    char* dst = pages(bytes, 2);
    char* stage = pages(step, 3);
    std::vector<double> t[4];
    for (int r = 0; r < rounds; ++r) {
      for (int k = 0; k < 4; ++k) {
        char* out = k < 2 ? buf : dst;
        const bool nt = k % 2 == 1;
        const double c0 = cpu_s();
        for (size_t s = 0; s < bytes; s += step) {
          std::memcpy(stage, buf + s, step);
          if (nt) tandem::stream_copy(out + s, stage, step);
          else std::memcpy(out + s, stage, step);
        }
        t[k].push_back(cpu_s() - c0);
      }
    }
    std::printf("  %8zu", mib);
    for (auto& v : t) {
      std::sort(v.begin(), v.end());
      std::printf(" %13.3f (%6.3f)", v.front() * 1e3, v[v.size() / 2] * 1e3);
    }
    std::printf("\n");
    std::free(buf);
    std::free(dst);
    std::free(stage);
  }
  return 0;
}
