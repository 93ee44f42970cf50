// allreduce-model: what the engine's alpha-beta model (engine/collectives/
// model.h, the one that picks the algorithm) predicts for an allreduce
// across N nodes, one rank per node, next to the scheme Tandem used before
// (every rank exchanging with every other: whole vectors up to 256 KiB sent
// per rank, else a direct reduce-scatter + allgather in n-1 pairwise rounds
// each). For docs/engine.md; prints a table, asserts nothing.
//
//   allreduce-model                      the link measured on the local cluster
//   allreduce-model ALPHA_US GBPS [COMBINE_GBPS]   another link
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "collectives/model.h"

using namespace tandem;

namespace {

// The previous scheme, with the same model: pairwise rounds. Small: n-1
// exchanges of the whole vector, then n-1 combines of it. Large: a direct
// reduce-scatter (per 1 MiB piece of a part, n-1 exchanges) and a pairwise
// allgather, n-1 rounds each, every rank combining its part n-1 times.
double before(int n, double m, const LinkModel& l) {
  if (n <= 1) return 0;
  if (m * (n - 1) <= 256 * 1024) return (n - 1) * (l.alpha + m * l.beta + m * l.gamma);
  const double part = m / n;
  const double pieces = std::max(1.0, std::ceil(part / (1 << 20)));
  return pieces * (n - 1) * l.alpha + (n - 1) * part * (l.beta + l.gamma) +
         (n - 1) * (l.alpha + part * l.beta);
}

const char* size_name(double b) {
  static char text[32];
  if (b >= 1 << 20) std::snprintf(text, sizeof text, "%.0f MiB", b / (1 << 20));
  else if (b >= 1 << 10) std::snprintf(text, sizeof text, "%.0f KiB", b / (1 << 10));
  else std::snprintf(text, sizeof text, "%.0f B", b);
  return text;
}

const char* short_name(AllreduceAlgorithm a) {
  switch (a) {
    case AllreduceAlgorithm::kRecursiveDoubling: return "RD";
    case AllreduceAlgorithm::kHalvingDoubling: return "HD";
    case AllreduceAlgorithm::kRing: return "ring";
    default: return "?";
  }
}

}  // namespace

int main(int argc, char** argv) {
  LinkModel l = measured_link();
  if (argc >= 3) {
    l.alpha = std::atof(argv[1]) * 1e-6;
    l.beta = 1.0 / (std::atof(argv[2]) * 1e9);
    if (argc >= 4) l.gamma = 1.0 / (std::atof(argv[3]) * 1e9);
  }
  std::printf(
      "alpha %.1f us, %.2f GB/s per direction, combine %.1f GB/s; times in ms (algorithm picked)\n",
      l.alpha * 1e6, 1e-9 / l.beta, 1e-9 / l.gamma);
  const std::vector<int> nodes = {2, 8, 64, 100, 128, 1000, 1024};
  const std::vector<double> sizes = {
      8, 1024, 64 * 1024.0, 1 << 20, 16.0 * (1 << 20), 256.0 * (1 << 20)};
  std::printf("%9s", "size");
  for (int n : nodes) std::printf(" %21d", n);
  std::printf("   nodes\n");
  for (double m : sizes) {
    std::printf("%9s", size_name(m));
    for (int n : nodes) {
      const AllreduceAlgorithm a = choose_allreduce(n, static_cast<size_t>(m), l);
      char cell[64];
      std::snprintf(cell, sizeof cell, "%.3f (%s) / %.3f",
                    predicted_seconds(a, n, static_cast<size_t>(m), l) * 1e3, short_name(a),
                    before(n, m, l) * 1e3);
      std::printf(" %21s", cell);
    }
    std::printf("\n");
  }
  std::printf("cell: now (algorithm) / before, both by the same model\n");
  return 0;
}
