// What the reduction kernels (common/reduce.cc) take on this machine, per
// type, beside a memcpy of the same output size: 2 and 4 inputs, sum, the
// output in place on the first input (as the direct allreduce writes) and
// into a buffer of its own (as the staged allreduce writes its part).
// Minimum over the rounds of the wall time of one call, so other load only
// adds outliers; output bytes per nanosecond (GB/s).
//
//   build/tools/reduce-probe [SIZE_KIB...] [-n ROUNDS]   (default 4 32 128 1024, 2000)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/reduce.h"

namespace {

template <typename F>
double best_ns(int rounds, F f) {
  double best = 1e30;
  for (int i = 0; i < rounds; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> kib;
  int rounds = 2000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-n" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else kib.push_back(std::strtoul(argv[i], nullptr, 10));
  }
  if (kib.empty()) kib = {4, 32, 128, 1024};
  const tandem_dtype_t types[] = {TANDEM_FLOAT32, TANDEM_FLOAT64, TANDEM_INT32,
                                  TANDEM_INT8,    TANDEM_FLOAT16, TANDEM_BFLOAT16};
  std::printf("# reduce-probe: output GB/s, best of %d calls\n", rounds);
  std::printf("# %8s %9s %8s %10s %10s %10s\n", "KiB", "type", "memcpy", "2 in", "2 in place",
              "4 in");
  for (size_t k : kib) {
    const size_t bytes = k << 10;
    std::vector<std::vector<char>> bufs(5, std::vector<char>(bytes, 1));
    std::vector<char> out(bytes);
    const double copy = best_ns(rounds, [&] { std::memcpy(out.data(), bufs[0].data(), bytes); });
    for (auto t : types) {
      const size_t count = bytes / tandem::dtype_size(t);
      tandem::Reduction r;
      r.dtype = t;
      const void* in[4] = {bufs[0].data(), bufs[1].data(), bufs[2].data(), bufs[3].data()};
      const double two = best_ns(rounds, [&] { tandem::reduce(out.data(), in, 2, count, r); });
      const void* own[2] = {bufs[4].data(), bufs[1].data()};
      const double place =
          best_ns(rounds, [&] { tandem::reduce(bufs[4].data(), own, 2, count, r); });
      const double four = best_ns(rounds, [&] { tandem::reduce(out.data(), in, 4, count, r); });
      const double b = static_cast<double>(bytes);
      std::printf("  %8zu %9s %8.1f %10.1f %10.1f %10.1f\n", k, tandem::dtype_name(t), b / copy,
                  b / two, b / place, b / four);
    }
  }
  return 0;
}
