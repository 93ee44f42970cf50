// Loopback throughput of the TCP transport: 2 ranks (threads of this
// process, real sockets), both calling sendrecv with each other at once, for
// message sizes 1 MiB .. 256 MiB. Prints time per sendrecv and GB/s per
// direction (bytes / time; both directions run at once, so the link carries
// twice that). Usage: tcp-bandwidth [max MiB, default 256]
//
// Under a launcher with 2 ranks (srun -N 2 -n 2 --horovod=on, tandem-run
// -np 2) each process is one rank and the bytes cross the real link between
// the nodes (TANDEM_TCP_IFNAME picks it): docs/engine.md uses this to measure
// the namespace cluster's veth/bridge ceiling.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/from_environment.h"
#include "bootstrap/memory_bootstrap.h"
#include "transport/tcp/tcp_transport.h"

using namespace tandem;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  std::vector<double> seconds;  // per size, rank 0's view
  std::vector<size_t> sizes;
  const std::string arg = argc > 1 ? argv[1] : "256";
  if (arg.find_first_of(",KM") != std::string::npos) {
    for (size_t at = 0; at < arg.size();) {
      char* end = nullptr;
      size_t v = std::strtoul(arg.c_str() + at, &end, 10);
      if (*end == 'K') v <<= 10, ++end;
      else if (*end == 'M') v <<= 20, ++end;
      sizes.push_back(v);
      at = static_cast<size_t>(end - arg.c_str()) + 1;
    }
  } else {
    const size_t max_mib = std::strtoul(arg.c_str(), nullptr, 10);
    for (size_t mib = 1; mib <= max_mib; mib *= 4) sizes.push_back(mib << 20);
  }
  seconds.resize(sizes.size());
  auto measure = [&](Bootstrap& b, int rank) {
    auto t = connect_tcp(b, {0, 1}, std::chrono::milliseconds(60000));
    for (size_t i = 0; i < sizes.size(); ++i) {
      const size_t bytes = sizes[i];
      std::vector<char> out(bytes, static_cast<char>(rank)), in(bytes);
      const int iters = static_cast<int>(std::min<size_t>(
          20000, std::max<size_t>(5, (size_t{2} << 30) / std::max<size_t>(bytes, 1))));
      t->sendrecv(1 - rank, out.data(), bytes, 1 - rank, in.data(), bytes);  // warm-up
      b.barrier(std::chrono::milliseconds(60000));
      const auto start = Clock::now();
      for (int k = 0; k < iters; ++k)
        t->sendrecv(1 - rank, out.data(), bytes, 1 - rank, in.data(), bytes);
      const double s = std::chrono::duration<double>(Clock::now() - start).count() / iters;
      if (rank == 0) seconds[i] = s;
    }
  };
  std::unique_ptr<Bootstrap> launched = bootstrap_from_environment();
  if (launched->identity().size == 2) {
    measure(*launched, launched->identity().rank);
    if (launched->identity().rank != 0) return 0;
  } else if (launched->identity().size == 1) {
    auto world = std::make_shared<MemoryWorld>(2);
    std::thread peer([&] {
      MemoryBootstrap b(world, 1);
      measure(b, 1);
    });
    MemoryBootstrap b(world, 0);
    measure(b, 0);
    peer.join();
  } else {
    std::fprintf(stderr,
                 "tcp-bandwidth: launched with %d ranks; it measures between 2 (or run it alone)\n",
                 launched->identity().size);
    return 2;
  }
  std::printf("%12s %14s %18s\n", "size (B)", "time (ms)", "GB/s per direction");
  for (size_t i = 0; i < sizes.size(); ++i)
    std::printf("%12zu %14.4f %18.2f\n", sizes[i], seconds[i] * 1e3, sizes[i] / seconds[i] / 1e9);
  return 0;
}
