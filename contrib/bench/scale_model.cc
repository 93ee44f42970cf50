// scale-model: what start-up and negotiation cost at N nodes (one rank per
// node), by the engine's own plan and cost functions: the sockets a rank
// opens (collectives/partners.h), the first allreduce and a negotiation
// round (collectives/model.h, the link measured on the local cluster), and
// the rendezvous store's work, with the constants measured by
// contrib/bench/scale.sh at 16-512 simulated nodes. Before (a full mesh of
// connections, a GET per rank and value, a negotiation slot per rank) and
// after (the planned partners, GATHER, the compact negotiation) side by
// side. For docs/engine.md (its scale figures); asserts nothing.
//
//   scale-model [CACHE_ENTRIES]        (default 256 tensors in the cache)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "collectives/model.h"
#include "collectives/partners.h"

using namespace tandem;

namespace {

// Measured by contrib/bench/scale.sh (docs/engine.md): per rank and start-up
// the store serves 44 requests (HELLO, then per allgather a SET, a GATHER
// and a DEL; 14 allgathers and a broadcast), and every rank receives ~305
// bytes of every rank's blobs (node name, job id, shm names, 3 endpoints,
// the wake relay's address...). Before GATHER each allgather was a GET per
// rank and value. The store thread's CPU per request and per byte out are
// fitted from its measured CPU time.
constexpr double kRequestsPerRank = 44;
constexpr double kAllgathers = 14;
constexpr double kBytesPerPair = 305;
// Fitted to the store thread's CPU time at 16-512 simulated nodes against
// the requests it served and the bytes it sent (the series: docs/engine.md):
// seconds per GATHER or SET, per GET before GATHER, and per byte out.
constexpr double kStoreSecondsPerRequest = 14e-6;
constexpr double kStoreSecondsPerGet = 8.8e-6;
constexpr double kStoreSecondsPerByte = 3.8e-9;
// A negotiation round before: an allgather of a 1 KiB slot per rank.
constexpr double kSlotBytes = 1024;

int planned_sockets(int n) {
  size_t most = 0;
  // Every rank's plan for small n; a sample of ranks beyond (the plan is
  // i +- 2^k and the fold: the same size for ranks of the same kind).
  const int step = n <= 4096 ? 1 : n / 997;
  for (int i = 0; i < n; i += step) most = std::max(most, algorithm_partners(i, n).size());
  return static_cast<int>(most);
}

int log2_ceil(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

}  // namespace

int main(int argc, char** argv) {
  const LinkModel l = measured_link();
  const double entries = argc >= 2 ? std::atof(argv[1]) : 256;
  const double compact = 1 + 2 * entries;  // need-full byte, OR and NOT-AND of each bit
  std::printf(
      "link: alpha %.1f us, %.2f GB/s, combine %.1f GB/s; %g cache entries "
      "(a negotiation round after: allreduce of %g bytes)\n",
      l.alpha * 1e6, 1e-9 / l.beta, 1e-9 / l.gamma, entries, compact);
  std::printf("%-42s", "nodes");
  const std::vector<int> ns = {16, 64, 256, 512, 1000, 10000};
  for (int n : ns) std::printf(" %18d", n);
  std::printf("\n");
  auto row = [&](const char* name, auto cell) {
    std::printf("%-42s", name);
    for (int n : ns) std::printf(" %18s", cell(n).c_str());
    std::printf("\n");
  };
  auto fmt = [](const char* f, double a, double b) {
    char s[64];
    std::snprintf(s, sizeof s, f, a, b);
    return std::string(s);
  };
  row("sockets per transport (planned / mesh)",
      [&](int n) { return fmt("%.0f / %.0f", planned_sockets(n), n - 1); });
  // Planned: the C API's and the runtime's transports, 3 listeners still
  // open, the store and the wake relay; the mesh: 3 transports, listeners
  // closed once every pair is connected.
  row("sockets per rank",
      [&](int n) { return fmt("%.0f / %.0f", 2 * planned_sockets(n) + 6, 3.0 * (n - 1) + 3); });
  row("connections in the job at start-up",
      [&](int n) { return fmt("%.3g / %.3g", n * planned_sockets(n) * 1.0, 1.5 * n * (n - 1.0)); });
  row("store requests (GATHER / GET each)", [&](int n) {
    return fmt("%.3g / %.3g", kRequestsPerRank * n, (kRequestsPerRank + kAllgathers * (n - 1)) * n);
  });
  row("store bytes out, MB",
      [&](int n) { return fmt("%.3g%.0s", kBytesPerPair * n * n / 1e6, 0); });
  row("store thread, s (GATHER / GET each)", [&](int n) {
    const double bytes = kBytesPerPair * n * n * kStoreSecondsPerByte;
    return fmt("%.3g / %.3g", kRequestsPerRank * n * kStoreSecondsPerRequest + bytes,
               kRequestsPerRank * n * kStoreSecondsPerRequest +
                   kAllgathers * (n - 1) * n * kStoreSecondsPerGet + bytes);
  });
  row("first allreduce (8 B): rounds, ms", [&](int n) {
    const int p = 1 << (log2_ceil(n + 1) - 1);
    const int rounds = log2_ceil(p) + (p == n ? 0 : 2);
    return fmt("%.0f, %.3f", rounds,
               predicted_seconds(AllreduceAlgorithm::kRecursiveDoubling, n, 8, l) * 1e3);
  });
  row("negotiation round: bytes in per rank", [&](int n) {
    const int p = 1 << (log2_ceil(n + 1) - 1);
    const double after = compact * (log2_ceil(p) + (p == n ? 0 : 1));
    return fmt("%.3g / %.3g", after, kSlotBytes * (n - 1));
  });
  row("negotiation round, ms (after / before)", [&](int n) {
    const double after = predicted_seconds(AllreduceAlgorithm::kRecursiveDoubling, n,
                                           static_cast<size_t>(compact), l);
    const double total = kSlotBytes * n;
    const double before = log2_ceil(n) * l.alpha + total * (l.beta + l.gamma);
    return fmt("%.3f / %.3f", after * 1e3, before * 1e3);
  });
  std::printf("cells: after / before where two are given\n");
  return 0;
}
