// Loopback throughput of the TCP transport: 2 ranks (threads of this
// process, real sockets), both calling sendrecv with each other at once, for
// message sizes 1 MiB .. 256 MiB. Prints time per sendrecv and GB/s per
// direction (bytes / time; both directions run at once, so the link carries
// twice that). Usage: tcp-bandwidth [max MiB, default 256]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "bootstrap/memory_bootstrap.h"
#include "transport/tcp/tcp_transport.h"

using namespace tandem;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const size_t max_mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 256;
  auto world = std::make_shared<MemoryWorld>(2);
  std::vector<double> seconds;  // per size, rank 0's view
  std::vector<size_t> sizes;
  for (size_t mib = 1; mib <= max_mib; mib *= 4) sizes.push_back(mib << 20);
  seconds.resize(sizes.size());
  auto rank_main = [&](int rank) {
    MemoryBootstrap b(world, rank);
    auto t = connect_tcp(b, {0, 1}, std::chrono::milliseconds(60000));
    for (size_t i = 0; i < sizes.size(); ++i) {
      const size_t bytes = sizes[i];
      std::vector<char> out(bytes, static_cast<char>(rank)), in(bytes);
      const int iters = static_cast<int>(std::max<size_t>(5, (size_t{2} << 30) / bytes));
      t->sendrecv(1 - rank, out.data(), bytes, 1 - rank, in.data(), bytes);  // warm-up
      b.barrier(std::chrono::milliseconds(60000));
      const auto start = Clock::now();
      for (int k = 0; k < iters; ++k)
        t->sendrecv(1 - rank, out.data(), bytes, 1 - rank, in.data(), bytes);
      const double s = std::chrono::duration<double>(Clock::now() - start).count() / iters;
      if (rank == 0) seconds[i] = s;
    }
  };
  std::thread peer(rank_main, 1);
  rank_main(0);
  peer.join();
  std::printf("%12s %14s %18s\n", "size (B)", "time (ms)", "GB/s per direction");
  for (size_t i = 0; i < sizes.size(); ++i)
    std::printf("%12zu %14.2f %18.2f\n", sizes[i], seconds[i] * 1e3, sizes[i] / seconds[i] / 1e9);
  return 0;
}
