#include "runtime/runtime.h"

#include <algorithm>
#include <tuple>

#include "runtime/wake_up.h"

namespace tandem::runtime {

bool Runtime::deadlocked(std::vector<CycleMessage>& messages) {
  std::vector<std::vector<Wait>> waits(messages.size());
  bool any = false;
  for (size_t r = 0; r < messages.size(); ++r) {
    waits[r] = std::move(messages[r].waits);
    any = any || !waits[r].empty();
  }
  DeadlockVerdict verdict = any ? find_deadlock(waits) : DeadlockVerdict{};
  // Twice in a row, from the same messages on every rank: the same answer
  // everywhere, and a thread that enqueued just after its rank's message
  // was built has been seen by the second round.
  if (verdict.found() && verdict == deadlock_candidate_) {
    if (rank_ == 0) report(log::Level::kError, verdict.message, __LINE__);
    fail_all(TANDEM_ERR_ABORTED, verdict.message);
    return true;
  }
  deadlock_candidate_ = std::move(verdict);
  return false;
}

std::vector<Wait> Runtime::describe_waits() {
  const double seconds = settings_.deadlock_check_seconds;
  if (seconds <= 0) return {};
  const auto now = Clock::now();
  const auto grace = ms(seconds * 1000);
  // Held throughout: a waiting thread leaves its wait (~BlockedWaiter) only
  // through this lock, so every handle in waited_ stays alive meanwhile.
  // (The lock order, runtime.h: wait_mu_ before a set's mu or join_mu_.)
  std::lock_guard<std::mutex> waits_lock(wait_mu_);
  if (waited_.empty() || now - blocked_since_ < grace) return {};
  const Clock::time_point last_enqueue{std::chrono::duration_cast<Clock::duration>(
      std::chrono::nanoseconds(last_work_ns_.load(std::memory_order_relaxed)))};
  if (now - last_enqueue < grace) return {};
  std::shared_ptr<HandleState> join;
  {
    std::lock_guard<std::mutex> lock(join_mu_);
    join = join_handle_;
  }
  const auto sets = sets_.snapshot();
  std::vector<Wait> out;
  for (const auto& [h, threads] : waited_) {
    if (h->done()) return {};  // its thread is about to go on
    Wait w;
    if (join && join.get() == h) {
      w.type = Wait::kJoin;
      w.name = "join";
      for (int r : sets.front()->coordinator().not_joined())
        if (r != rank_) w.missing.push_back(r);
      out.push_back(std::move(w));
      continue;
    }
    int tensors = 0, first_index = -1;
    std::vector<int32_t> missing;
    for (const auto& set : sets) {
      if (!set->member()) continue;
      std::lock_guard<std::mutex> lock(set->mu);
      if (!set->fresh.empty()) return {};  // something to announce: not blocked
      for (const auto& [name, e] : set->pending) {
        if (e.handle.get() != h) continue;
        std::optional<std::vector<int>> m;
        if (e.announced == TensorEntry::Announced::kInFull) m = set->coordinator().missing(name);
        else if (e.announced == TensorEntry::Announced::kByBit)
          m = set->coordinator().missing_bit(e.bit);
        if (!m) return {};  // not negotiated in a round yet
        missing.insert(missing.end(), m->begin(), m->end());
        ++tensors;
        if (first_index < 0 || e.index < first_index) {
          first_index = e.index;
          w.set = set->id();
          w.type = static_cast<uint8_t>(e.request.type);
          w.name = name;
        }
      }
    }
    if (tensors == 0) return {};  // completed meanwhile
    w.more = static_cast<uint32_t>(tensors - 1);
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    w.missing = std::move(missing);
    out.push_back(std::move(w));
  }
  std::sort(out.begin(), out.end(), [](const Wait& a, const Wait& b) {
    return std::tie(a.set, a.type, a.name) < std::tie(b.set, b.type, b.name);
  });
  return out;
}

}  // namespace tandem::runtime
