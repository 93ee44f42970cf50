// What this machine moves between two cores: one thread pinned to CPU A
// writes SIZE bytes (memset, so the lines are dirty in A's cache) and
// signals; a thread pinned to CPU B copies them into a buffer of its own
// and signals back. The round is timed on A; the minimum and the mean over
// the rounds are printed beside the same write and copy on one core. Every
// node-local allreduce moves at least its size across cores per rank (a
// peer's inputs or results), so this is the floor both Tandem and Open MPI
// stand on (docs/engine.md).
//
//   build/tools/cross-core-probe [SIZE_KIB...] [-a CPU] [-b CPU] [-n ROUNDS]
//   (default 4 64 1024 4096, CPUs 0 and 1, 2000 rounds)
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

bool pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  return pthread_setaffinity_np(pthread_self(), sizeof s, &s) == 0;
}

double us(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> kib;
  int a = 0, b = 1, rounds = 2000;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    if (s == "-a" && i + 1 < argc) a = std::atoi(argv[++i]);
    else if (s == "-b" && i + 1 < argc) b = std::atoi(argv[++i]);
    else if (s == "-n" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else kib.push_back(std::strtoul(argv[i], nullptr, 10));
  }
  if (kib.empty()) kib = {4, 64, 1024, 4096};
  std::printf("# cross-core-probe: CPU %d writes, CPU %d copies; us per round, %d rounds\n", a, b,
              rounds);
  std::printf("# %8s %10s %10s %12s\n", "KiB", "best", "mean", "one core");
  for (size_t k : kib) {
    const size_t bytes = k << 10;
    std::vector<char> buf(bytes, 1), theirs(bytes), mine(bytes);
    alignas(64) std::atomic<long> go{0};
    alignas(64) std::atomic<long> done{0};
    bool pinned = true;
    std::thread peer([&] {
      pinned = pin(b) && pinned;
      for (long i = 1; i <= rounds; ++i) {
        while (go.load(std::memory_order_acquire) < i) {}
        std::memcpy(theirs.data(), buf.data(), bytes);
        done.store(i, std::memory_order_release);
      }
    });
    pinned = pin(a) && pinned;
    double best = 1e30, sum = 0;
    for (long i = 1; i <= rounds; ++i) {
      const auto t0 = Clock::now();
      std::memset(buf.data(), static_cast<int>(i), bytes);
      go.store(i, std::memory_order_release);
      while (done.load(std::memory_order_acquire) < i) {}
      const double d = us(t0, Clock::now());
      best = std::min(best, d);
      sum += d;
    }
    peer.join();
    double local = 1e30;
    for (int i = 0; i < rounds; ++i) {
      const auto t0 = Clock::now();
      std::memset(buf.data(), i, bytes);
      std::memcpy(mine.data(), buf.data(), bytes);
      local = std::min(local, us(t0, Clock::now()));
    }
    std::printf("  %8zu %10.2f %10.2f %12.2f%s\n", k, best, sum / rounds, local,
                pinned ? "" : "  (not pinned: fewer CPUs?)");
  }
  return 0;
}
