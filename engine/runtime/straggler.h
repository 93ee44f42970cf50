// Who holds the step back: the statistics of the straggler report
// (docs/runtime.md, "Stragglers"), without synchronised clocks.
//
// In every round of the global set that runs something, each rank measures
// its own wait: from its latest enqueue of a tensor that runs now (or from
// the end of its previous such round, whichever is later) to the moment the
// round decided. Every rank sees the same decision, so the rank that asked
// last waited least; the difference between the longest wait and a rank's
// own is how long the first rank to be ready waited for that rank (its
// imposed wait, "lateness"). Only differences of waits measured on one
// clock each are compared, so the ranks' clocks need not agree.
//
// Each rank keeps one wait per round (RoundWaits, a deterministic
// subsample past a cap: every rank keeps the same rounds). At a report all
// ranks reduce the waits (the longest and the shortest per round), fold
// their own into a Summary (rounds last, imposed wait, a log histogram of
// it) and exchange the summaries; every rank then holds the same Report.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace tandem::runtime {

// Where a rank runs, as the binding left it: node name, GPU (the CUDA
// device id it was given, or "none") and CPUs ("0-3,8").
struct RankPlace {
  std::string host = "?";
  std::string gpu = "none";
  std::string cpus = "?";
};

// This process's place: the node name of the log, the CUDA device at
// position `device_index` of CUDA_VISIBLE_DEVICES, the CPU affinity.
RankPlace this_process_place(int device_index);

// One wait per round, in seconds, with the same rounds kept on every rank.
class RoundWaits {
 public:
  static constexpr size_t kCap = 2048;
  void add(float seconds);
  const std::vector<float>& samples() const { return samples_; }
  uint64_t rounds() const { return rounds_; }  // every round seen, kept or not
  uint64_t stride() const { return stride_; }  // each kept sample stands for this many
  void clear();

 private:
  std::vector<float> samples_;
  uint64_t rounds_ = 0;
  uint64_t stride_ = 1;
};

// Imposed waits by powers of two, eight bins per octave from a microsecond.
struct WaitHistogram {
  static constexpr int kBins = 256;
  std::vector<uint64_t> counts = std::vector<uint64_t>(kBins, 0);
  void add(double seconds, uint64_t n);
  void merge(const WaitHistogram& o);
  double quantile(double q) const;  // seconds; 0 when empty
};

struct Summary {
  int rank = 0;
  RankPlace place;
  double seconds = 0;   // the period's wall time on this rank
  uint64_t rounds = 0;  // rounds measured
  uint64_t last = 0;    // rounds this rank asked last in
  double held = 0;      // seconds the first rank to be ready waited for it, summed
  WaitHistogram imposed;

  // Folds one report's samples: `longest` and `shortest` are the reduced
  // waits of the kept rounds, `mine` this rank's.
  void fold(const RoundWaits& mine, const std::vector<float>& longest,
            const std::vector<float>& shortest);
  void merge(const Summary& o);  // the same rank, a later period
  Bytes serialize() const;
  static Summary parse(const Bytes& b);  // throws Error on a malformed blob
};

struct Report {
  struct Row {
    int rank = 0;
    RankPlace place;
    uint64_t rounds = 0, last = 0;
    double last_share = 0, median = 0, p95 = 0, held = 0, held_share = 0;
    bool stands_out = false;
  };
  double seconds = 0;
  uint64_t rounds = 0;
  std::vector<Row> rows;  // by time cost, the largest first
  // Who is named: "rank", "ranks", "node" or "none"; the ranks and, for a
  // node, its name.
  std::string kind = "none";
  std::vector<int> named;
  std::string node;
  std::string verdict;  // one line

  std::vector<std::string> lines(const std::string& title) const;  // the printed report
  std::string json() const;
};

// The verdict rule. A rank stands out when the share of the time the set
// waited for it exceeds the median rank's share by kStandOut; several that
// stand out on one node name the node.
inline constexpr double kStandOut = 0.10;
// summaries by set rank; seconds: the period (set rank 0's).
Report make_report(const std::vector<Summary>& summaries);

}  // namespace tandem::runtime
