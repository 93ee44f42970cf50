// The alpha-beta model behind the choices of model.h. Each allreduce's cost is
// added up along its own schedule, with the same pieces (steps.h) and the
// same fold as the code: a step that sends s bytes and receives and combines
// c costs ceil(max(s, c) / piece) * alpha + max(s, c) * beta + c * gamma.
// Only the critical path counts (a folded pair's extra transfers delay the
// whole group; ranks work in parallel otherwise).
#include <algorithm>
#include <cmath>

#include "collectives/model.h"
#include "collectives/steps.h"
#include "common/errors.h"
#include "common/settings.h"

namespace tandem {
namespace {

double exchange(const LinkModel& l, double send, double combine) {
  const double most = std::max(send, combine);
  const double pieces = std::max(1.0, std::ceil(most / static_cast<double>(steps::kPieceBytes)));
  return pieces * l.alpha + most * l.beta + combine * l.gamma;
}

double move(const LinkModel& l, double bytes) { return l.alpha + bytes * l.beta; }

int log2_floor(int n) {
  int k = 0;
  while ((2 << k) <= n) ++k;
  return k;
}

}  // namespace

LinkModel measured_link() {
  // Two namespace nodes of the local cluster on the 2-core VM (docs/engine.md,
  // "The model"): alpha is an 8-byte sendrecv's time, beta a byte's time in
  // one direction. gamma is fitted rather than the kernel's speed: at 2
  // nodes, where recursive doubling and halving-doubling move the same
  // bytes, halving-doubling was faster from 128 KiB up (interleaved runs),
  // and this gamma reproduces that; it stands for what a step costs per
  // byte beyond the wire. Not refitted since the stream moves in whole lines
  // and the kernel folds in registers: both made every algorithm cheaper per
  // byte, and the choices between them were not re-measured.
  LinkModel l;
  l.alpha = 10e-6;
  l.beta = 1.0 / 1.5e9;
  l.gamma = 1.0 / 4e9;
  return l;
}

double predicted_seconds(AllreduceAlgorithm a, int n, size_t bytes, const LinkModel& l) {
  if (n <= 1 || bytes == 0) return 0;
  const double m = static_cast<double>(bytes);
  const int k = log2_floor(n);
  const int p = 1 << k;
  const double fold = p == n ? 0 : exchange(l, m, m) + move(l, m);  // in and out
  switch (a) {
    case AllreduceAlgorithm::kRecursiveDoubling: return fold + k * exchange(l, m, m);
    case AllreduceAlgorithm::kHalvingDoubling: {
      double t = fold;
      double part = m;
      for (int i = 0; i < k; ++i) {
        part /= 2;
        t += exchange(l, part, part) + move(l, part);
      }
      return t;
    }
    case AllreduceAlgorithm::kRing: {
      const double block = m / n;
      return (n - 1) * (exchange(l, block, block) + move(l, block));
    }
    case AllreduceAlgorithm::kAuto: break;
  }
  throw InvalidArgument("predicted_seconds: no model for algorithm 'auto'");
}

AllreduceAlgorithm choose_allreduce(int n, size_t bytes, const LinkModel& link) {
  AllreduceAlgorithm best = AllreduceAlgorithm::kRecursiveDoubling;
  double best_s = predicted_seconds(best, n, bytes, link);
  for (auto a : {AllreduceAlgorithm::kHalvingDoubling, AllreduceAlgorithm::kRing}) {
    const double s = predicted_seconds(a, n, bytes, link);
    if (s < best_s) best = a, best_s = s;
  }
  return best;
}

int log2_ceil(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

// Bruck copies the gathered bytes once more, at about the speed of a combine.
bool allgather_uses_bruck(int n, size_t total, const LinkModel& l) {
  if (n <= 2) return false;
  const double bruck = log2_ceil(n) * l.alpha + static_cast<double>(total) * l.gamma;
  return bruck < (n - 1) * l.alpha;
}

bool broadcast_uses_scatter(int n, size_t bytes, const LinkModel& l) {
  if (n <= 2) return false;
  const double m = static_cast<double>(bytes), k = log2_ceil(n);
  const double binomial = k * (l.alpha + m * l.beta);
  const double scatter = k * l.alpha + m * l.beta + (n - 1) * l.alpha + m * l.beta;
  return scatter < binomial;
}

const char* algorithm_name(AllreduceAlgorithm a) {
  switch (a) {
    case AllreduceAlgorithm::kAuto: return "auto";
    case AllreduceAlgorithm::kRecursiveDoubling: return "recursive_doubling";
    case AllreduceAlgorithm::kHalvingDoubling: return "halving_doubling";
    case AllreduceAlgorithm::kRing: return "ring";
  }
  return "unknown";
}

AllreduceAlgorithm parse_allreduce_algorithm(const std::string& name) {
  for (auto a : {AllreduceAlgorithm::kAuto, AllreduceAlgorithm::kRecursiveDoubling,
                 AllreduceAlgorithm::kHalvingDoubling, AllreduceAlgorithm::kRing})
    if (name == algorithm_name(a)) return a;
  throw InvalidArgument(std::string(kAllreduceAlgorithmVariable) + "='" + name +
                        "' is not an algorithm; expected auto, recursive_doubling, "
                        "halving_doubling or ring");
}

AllreduceAlgorithm allreduce_algorithm_from_environment() {
  return parse_allreduce_algorithm(env_string(kAllreduceAlgorithmVariable));
}

}  // namespace tandem
