#include "runtime/autotune.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "common/errors.h"

namespace tandem::runtime {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// After the start values, points spread over the box (fusion MiB, cycle
// ms): a small and a large buffer, a short and a long window, so that the
// model sees both ends of each knob before it guesses.
constexpr double kTestPoints[][2] = {{4, 5}, {32, 10}, {16, 1}};

}  // namespace

Autotuner::Autotuner(AutotuneConfig config, TunedValues start, Clock::time_point now)
    : config_(std::move(config)), current_(start), warmup_left_(config_.warmup_samples) {
  if (!config_.fusion_fixed) knobs_.push_back(Knob::kFusion);
  if (!config_.cycle_fixed) knobs_.push_back(Knob::kCycle);
  BayesianOptimizer::Bounds bounds;
  for (Knob k : knobs_) bounds.emplace_back(0.0, k == Knob::kFusion ? kMaxFusionMiB : kMaxCycleMs);
  if (!knobs_.empty()) bayes_ = std::make_unique<BayesianOptimizer>(bounds, config_.noise);
  if (!config_.log_path.empty()) {
    log_.open(config_.log_path, std::ios::out | std::ios::trunc);
    if (!log_)
      throw InvalidArgument("TANDEM_AUTOTUNE_LOG='" + config_.log_path +
                            "': cannot open it for writing (" + std::strerror(errno) +
                            "); name a file in a writable folder, or unset the variable");
    // Horovod's header, so that a script that reads Horovod's log reads
    // this one.
    log_ << "hierarchical_allreduce,hierarchical_allgather,torus_allreduce,cache_enabled,"
            "cycle_time_ms,tensor_fusion_threshold,score"
         << std::endl;
  }
  if (warmup_left_ == 0) phase_ = Phase::kJoint;
  if (phase_ == Phase::kJoint && knobs_.empty()) enter_cache_phase();
  started(now);
}

void Autotuner::started(Clock::time_point now) {
  waiting_ = false;
  runs_.clear();
  window_ = 0;
  window_bytes_ = 0;
  window_start_ = now;
}

bool Autotuner::note(const std::vector<Ran>& ran, Clock::time_point now) {
  if (settled() || waiting_) return false;
  for (const Ran& r : ran) {
    // The count before this run: a window holds steps_per_sample runs of
    // its most frequent tensor, and the run that would be one more opens
    // the next window (its cycle's bytes count there).
    const int before = runs_[*r.name]++;
    if (before >= (window_ + 1) * config_.steps_per_sample) {
      const double us = std::chrono::duration<double, std::micro>(now - window_start_).count();
      window_scores_[window_] = us > 0 ? window_bytes_ / us : 0;
      window_bytes_ = 0;
      window_start_ = now;
      ++window_;
      break;
    }
  }
  for (const Ran& r : ran) window_bytes_ += static_cast<double>(r.bytes);
  if (window_ < kWindows) return false;
  std::sort(std::begin(window_scores_), std::end(window_scores_));
  const TunedValues before = current_;
  const bool was_settled = settled();
  finish_sample(window_scores_[kWindows / 2]);
  started(now);
  if (current_ == before && settled() == was_settled) return false;
  waiting_ = true;
  return true;
}

std::vector<double> Autotuner::point(const TunedValues& v) const {
  std::vector<double> p;
  for (Knob k : knobs_)
    p.push_back(k == Knob::kFusion ? static_cast<double>(v.fusion_threshold_bytes) / kMiB
                                   : v.cycle_time_ms);
  return p;
}

TunedValues Autotuner::with_point(TunedValues v, const std::vector<double>& p) const {
  for (size_t i = 0; i < knobs_.size(); ++i) {
    if (knobs_[i] == Knob::kFusion)
      v.fusion_threshold_bytes = static_cast<size_t>(std::llround(p[i] * kMiB));
    else v.cycle_time_ms = p[i];
  }
  return v;
}

void Autotuner::finish_sample(double score) {
  if (phase_ == Phase::kWarmup) {
    if (--warmup_left_ > 0) return;
    phase_ = Phase::kJoint;
    if (knobs_.empty()) enter_cache_phase();
    return;
  }
  history_.push_back({current_, score});
  log_row(current_, score);
  if (phase_ == Phase::kJoint) {
    bayes_->add(point(current_), score);
    ++joint_samples_;
    if (joint_samples_ >= config_.max_samples) {
      enter_cache_phase();
      return;
    }
    const size_t fixed = joint_samples_ - 1;
    if (fixed < std::size(kTestPoints)) {
      std::vector<double> p;
      for (Knob k : knobs_) p.push_back(kTestPoints[fixed][k == Knob::kFusion ? 0 : 1]);
      current_ = with_point(current_, p);
    } else {
      current_ = with_point(current_, bayes_->next());
    }
    return;
  }
  // The cache phase has one sample: the other setting was just scored.
  settle();
}

void Autotuner::enter_cache_phase() {
  if (config_.cache_fixed || history_.empty()) {
    settle();
    return;
  }
  phase_ = Phase::kCache;
  const auto best =
      std::max_element(history_.begin(), history_.end(),
                       [](const Sample& a, const Sample& b) { return a.score < b.score; });
  current_ = best->values;
  current_.cache_enabled = !current_.cache_enabled;
}

void Autotuner::settle() {
  phase_ = Phase::kSettled;
  if (history_.empty()) return;
  const auto best =
      std::max_element(history_.begin(), history_.end(),
                       [](const Sample& a, const Sample& b) { return a.score < b.score; });
  current_ = best->values;
  // Horovod ends its log with the best sample's row.
  log_row(best->values, best->score);
}

// One row in Horovod's format (its quirks included: the space after the
// third comma, the threshold in MiB), the hierarchical columns as Tandem
// runs: its allreduce is always hierarchical (within the node, then
// across), allgather and torus are not choices (docs/runtime.md).
void Autotuner::log_row(const TunedValues& v, double score) {
  if (!log_.is_open()) return;
  log_ << 1 << "," << 0 << "," << 0 << ", " << (v.cache_enabled ? 1 : 0) << "," << v.cycle_time_ms
       << "," << static_cast<double>(v.fusion_threshold_bytes) / kMiB << "," << score << std::endl;
}

}  // namespace tandem::runtime
