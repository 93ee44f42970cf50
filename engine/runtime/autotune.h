// The autotuner (TANDEM_AUTOTUNE, Horovod's HOROVOD_AUTOTUNE;
// docs/runtime.md "Autotune"): while the job trains, rank 0 tries values of
// the runtime's knobs, scores each by the bytes the cycles ran per unit of
// time, and settles on the best.
//
// A sample is five windows; a window ends when some tensor has run
// steps_per_sample times in it (a training step runs each gradient once,
// so a window is that many steps whatever the cycles per step), and the
// sample's score is the median of its windows' bytes per microsecond, so
// one slow window (a checkpoint, a data-loader hiccup) does not decide.
// The first warmup samples are not scored (caches warm, allocators settle).
// Then the fusion threshold and the cycle time are searched together: the
// start values (the defaults, so that tuning can only keep or beat them),
// three fixed points spread over the box, then the Bayesian optimizer
// (bayesian_optimizer.h), max_samples in all; then the response cache is
// tried the other way at the best point found. Then the best sample's
// values are kept for the rest of the job. A knob the user set explicitly
// is not tuned, as in Horovod.
//
// The tuner lives on rank 0 only; it decides, and the runtime carries its
// values to every rank in the next cycle's messages (cycle_message.h), so
// every rank applies them after the same cycle. It writes the log
// (TANDEM_AUTOTUNE_LOG) in Horovod's columns.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/bayesian_optimizer.h"

namespace tandem::runtime {

// The knobs the tuner sets; the same on every rank at every cycle.
struct TunedValues {
  size_t fusion_threshold_bytes = 0;
  double cycle_time_ms = 0;
  bool cache_enabled = true;
  bool operator==(const TunedValues& o) const {
    return fusion_threshold_bytes == o.fusion_threshold_bytes && cycle_time_ms == o.cycle_time_ms &&
           cache_enabled == o.cache_enabled;
  }
  bool operator!=(const TunedValues& o) const { return !(*this == o); }
};

struct AutotuneConfig {
  int warmup_samples = 3;
  int steps_per_sample = 10;
  int max_samples = 20;  // of the fusion threshold and cycle time together
  double noise = 0.8;    // the Gaussian process's (bayesian_optimizer.h)
  // Set by the user: kept as they are.
  bool fusion_fixed = false;
  bool cycle_fixed = false;
  bool cache_fixed = false;
  std::string log_path;  // empty: no log
};

class Autotuner {
 public:
  using Clock = std::chrono::steady_clock;
  // The bounds of the search: Tandem's defaults sit inside them.
  static constexpr double kMaxFusionMiB = 128;
  static constexpr double kMaxCycleMs = 20;
  static constexpr int kWindows = 5;

  // start: the values the job runs with now (the first sample's). Opens
  // and truncates the log, with its header; throws InvalidArgument naming
  // TANDEM_AUTOTUNE_LOG when it cannot.
  Autotuner(AutotuneConfig config, TunedValues start, Clock::time_point now);

  // After a cycle ran: the tensors it ran (names and bytes). True when a
  // sample ended with new values to try, or with the tuner settled: send
  // current() (and settled()) to every rank, then call started() once they
  // apply. Cycles noted in between are not counted.
  struct Ran {
    const std::string* name;
    size_t bytes;
  };
  bool note(const std::vector<Ran>& ran, Clock::time_point now);
  // The values sent took effect (at the end of a cycle on every rank).
  void started(Clock::time_point now);

  const TunedValues& current() const { return current_; }
  bool settled() const { return phase_ == Phase::kSettled; }
  // Scored samples so far (each a row of the log).
  int scored() const { return static_cast<int>(history_.size()); }

 private:
  enum class Phase { kWarmup, kJoint, kCache, kSettled };
  enum class Knob { kFusion, kCycle };
  void finish_sample(double score);
  void enter_cache_phase();
  void settle();
  std::vector<double> point(const TunedValues& v) const;
  TunedValues with_point(TunedValues v, const std::vector<double>& p) const;
  void log_row(const TunedValues& v, double score);

  AutotuneConfig config_;
  TunedValues current_;
  Phase phase_ = Phase::kWarmup;
  int warmup_left_ = 0;
  std::vector<Knob> knobs_;  // the joint search's dimensions
  std::unique_ptr<BayesianOptimizer> bayes_;
  int joint_samples_ = 0;
  struct Sample {
    TunedValues values;
    double score;
  };
  std::vector<Sample> history_;

  // The sample being measured.
  bool waiting_ = false;  // values sent, not yet applied
  std::unordered_map<std::string, int> runs_;
  int window_ = 0;
  double window_bytes_ = 0;
  Clock::time_point window_start_;
  double window_scores_[kWindows] = {};

  std::ofstream log_;
};

}  // namespace tandem::runtime
