#include <cmath>
#include <limits>

#include "runtime/runtime.h"
#include "runtime/wake_up.h"

namespace tandem::runtime {

namespace {
double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
}  // namespace

bool Runtime::straggler_due(const CycleMessage& mine) const {
  if (!straggler_on() || rank_ != 0) return false;
  return mine.shutdown ||
         seconds_between(period_start_, Clock::now()) >= settings_.straggler_report_seconds;
}

// This rank's wait in a round that runs something: from its latest enqueue
// of what runs now, or from the end of its previous such round when that
// came later (it could not have run sooner), to the decision. A rank with
// nothing of its own in the round (joined) waited the whole time.
void Runtime::note_waits(ProcessSet& set, const std::vector<Response>& responses,
                         Clock::time_point decided) {
  if (set.id() != TANDEM_GLOBAL_PROCESS_SET || responses.empty()) return;
  Clock::time_point latest = last_ran_;
  {
    std::lock_guard<std::mutex> lock(set.mu);
    for (const Response& r : responses) {
      if (r.kind != Response::Kind::kTensor) continue;
      auto it = set.pending.find(r.name);
      if (it != set.pending.end() && it->second.enqueued > latest) latest = it->second.enqueued;
    }
  }
  round_waits_.add(static_cast<float>(std::max(0.0, seconds_between(latest, decided))));
}

void Runtime::note_ran(ProcessSet& set, const std::vector<Response>& responses) {
  if (set.id() == TANDEM_GLOBAL_PROCESS_SET && !responses.empty()) last_ran_ = Clock::now();
}

// One allreduce (the longest and, negated, the shortest wait of every kept
// round; a fixed size, so that a member that measured nothing still takes
// part) and one exchange of the members' summaries. Both are the set's
// ordinary collectives, with their deadline and their errors.
void Runtime::exchange_straggler(ProcessSet& set, bool final) {
  DataPath& path = set.data_path();
  const auto now = Clock::now();
  constexpr size_t kCap = RoundWaits::kCap;
  const std::vector<float>& mine = round_waits_.samples();
  std::vector<float> reduced(2 * kCap, -std::numeric_limits<float>::infinity());
  for (size_t k = 0; k < mine.size(); ++k) {
    reduced[k] = mine[k];
    reduced[kCap + k] = -mine[k];
  }
  path.allreduce(reduced.data(), reduced.size(), TANDEM_FLOAT32, TANDEM_MAX, 1.0, 1.0);
  std::vector<float> longest(reduced.begin(), reduced.begin() + mine.size());
  std::vector<float> shortest(mine.size());
  for (size_t k = 0; k < mine.size(); ++k) shortest[k] = -reduced[kCap + k];

  Summary own;
  own.rank = rank_;
  own.place = place_;
  own.seconds = seconds_between(period_start_, now);
  own.fold(round_waits_, longest, shortest);
  std::vector<Summary> period;
  for (const Bytes& b : path.exchange(own.serialize())) period.push_back(Summary::parse(b));
  round_waits_.clear();
  period_start_ = now;

  if (straggler_totals_.size() != period.size()) straggler_totals_ = period;
  else
    for (size_t r = 0; r < period.size(); ++r) straggler_totals_[r].merge(period[r]);
  // Every member's period is set rank 0's, so that the shares of one report
  // have one denominator.
  for (Summary& s : period) s.seconds = period.front().seconds;
  for (Summary& s : straggler_totals_) s.seconds = straggler_totals_.front().seconds;
  const Report last = make_report(period);
  const Report total = make_report(straggler_totals_);
  {
    std::lock_guard<std::mutex> lock(straggler_mu_);
    ++straggler_reports_;
    straggler_json_ = "{\"reports\":" + std::to_string(straggler_reports_) +
                      ",\"period\":" + last.json() + ",\"total\":" + total.json() + "}";
  }
  if (rank_ != 0) return;
  std::vector<std::pair<std::string, double>> held;
  for (const Report::Row& row : last.rows)
    held.emplace_back("rank " + std::to_string(row.rank), row.held_share);
  timeline_.counter("straggler: share of the period the set waited for", held);
  // What the user asked for with TANDEM_STRAGGLER_REPORT: no log level hides it.
  const std::vector<std::string> lines =
      final ? total.lines("straggler summary") : last.lines("straggler report");
  for (const std::string& line : lines) {
    if (log_tap_) log_tap_(log::Level::kInfo, line);
    else log::write_always(log::Level::kInfo, log::Subsys::runtime, __FILE__, __LINE__, line);
  }
}

std::string Runtime::straggler_json() const {
  std::lock_guard<std::mutex> lock(straggler_mu_);
  if (straggler_json_.empty()) return "{\"reports\":0,\"period\":null,\"total\":null}";
  return straggler_json_;
}

}  // namespace tandem::runtime
