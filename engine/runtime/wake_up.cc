#include "runtime/runtime.h"

#include <algorithm>

#include "runtime/wake_up.h"

namespace tandem::runtime {

// Called on every enqueue: cheap when the background thread already knows
// there is work (it reads last_work_ns_ for the batching window).
void Runtime::wake() {
  last_work_ns_.store(now_ns(), std::memory_order_relaxed);
  if (work_.load(std::memory_order_seq_cst)) return;
  {
    std::lock_guard<std::mutex> lock(work_mu_);
    if (!work_) {
      first_work_ = Clock::now();
      work_.store(true, std::memory_order_seq_cst);
    }
  }
  work_cv_.notify_one();
  world_->wake_self();
}

Runtime::BlockedWaiter::BlockedWaiter(Runtime& rt, const HandleState& h) {
  if (h.done()) return;
  rt_ = &rt;
  h_ = &h;
  {
    std::lock_guard<std::mutex> lock(rt.wait_mu_);
    if (rt.waited_.empty()) rt.blocked_since_ = Clock::now();
    ++rt.waited_[h_];
  }
  rt.blocked_waiters_.fetch_add(1, std::memory_order_seq_cst);
  if (rt.in_window_.load(std::memory_order_seq_cst)) {
    // Taking the lock orders this with the window's predicate check, so
    // the notification cannot fall between its check and its sleep.
    { std::lock_guard<std::mutex> lock(rt.work_mu_); }
    rt.work_cv_.notify_one();
  }
}

Runtime::BlockedWaiter::~BlockedWaiter() {
  if (!rt_) return;
  rt_->blocked_waiters_.fetch_sub(1, std::memory_order_seq_cst);
  std::lock_guard<std::mutex> lock(rt_->wait_mu_);
  auto it = rt_->waited_.find(h_);
  if (it != rt_->waited_.end() && --it->second == 0) rt_->waited_.erase(it);
}

bool Runtime::has_pending() const {
  for (const auto& set : sets_.snapshot()) {
    if (!set->member()) continue;
    std::lock_guard<std::mutex> lock(set->mu);
    if (!set->pending.empty()) return true;
  }
  std::lock_guard<std::mutex> lock(join_mu_);
  return join_handle_ != nullptr;
}

bool Runtime::has_local_work() const {
  return work_.load(std::memory_order_seq_cst) || stop_.load(std::memory_order_seq_cst) ||
         fatal_set_.load(std::memory_order_relaxed);
}

// Returns true when this rank should run a cycle now: it has work of its own
// (after the batching window), a peer asked for one, or (across nodes) the
// idle wait passed; false when it only woke to look at stalls.
bool Runtime::wait_for_work() {
  if (!has_local_work()) {
    const bool lossy = world_->wake_ups_may_be_lost();
    const bool awake = lossy && Clock::now() - last_busy_ < kStayAwake;
    if (world_->can_wake_members() && !awake) {
      // Sleep until work arrives here or a peer asks for the next cycle;
      // no empty rounds, so an idle engine costs no CPU.
      const bool waiting = has_pending();
      Clock::duration check = waiting ? Clock::duration(kPendingCheck) : kIdleCheck;
      if (settings_.stall_check_seconds > 0)
        check = std::min(check, ms(settings_.stall_check_seconds * 1000 / 4));
      if (lossy) check = std::min(check, Clock::duration(kRelayFallback));
      const bool asked = world_->wait_for_round(cycles_done_, Clock::now() + check,
                                                [this] { return has_local_work(); });
      // A peer's cycle: join it at once; a timeout with tensors waiting:
      // a cycle, so that a lost peer fails them.
      if (!has_local_work()) return asked || waiting || lossy;
    } else {
      // Across nodes without the relay (or right after a busy round, see
      // kStayAwake) peers cannot wake us: an empty round every idle wait
      // lets a peer with work proceed.
      std::unique_lock<std::mutex> lock(work_mu_);
      work_cv_.wait_for(lock, ms(settings_.idle_wait_ms), [&] { return has_local_work(); });
      if (!has_local_work()) return true;
    }
  }
  batching_window();
  std::lock_guard<std::mutex> lock(work_mu_);
  work_.store(false, std::memory_order_seq_cst);
  return true;
}

// Tensors enqueued back to back share a cycle: wait until enqueues pause
// for kQuietGap, at most TANDEM_CYCLE_TIME after the first one, or until an
// API thread blocks on a handle (it has enqueued what it had). Enqueues do
// not wake this sleep (that would cost a wake-up per tensor); it looks at
// the time of the latest one when it ends.
void Runtime::batching_window() {
  if (tuned_.cycle_time_ms <= 0) return;
  std::unique_lock<std::mutex> lock(work_mu_);
  const Clock::time_point cap = first_work_ + ms(tuned_.cycle_time_ms);
  in_window_.store(true, std::memory_order_seq_cst);
  auto close = [&] { return stop_.load() || blocked_waiters_.load(std::memory_order_seq_cst) > 0; };
  while (!close()) {
    const Clock::time_point last{std::chrono::duration_cast<Clock::duration>(
        std::chrono::nanoseconds(last_work_ns_.load(std::memory_order_relaxed)))};
    const auto until = std::min(cap, last + kQuietGap);
    if (Clock::now() >= until) break;
    work_cv_.wait_until(lock, until, close);
  }
  in_window_.store(false, std::memory_order_seq_cst);
}

}  // namespace tandem::runtime
