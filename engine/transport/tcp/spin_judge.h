// When a TCP transport stops spinning before it sleeps (tcp_transport_impl.h
// says why it spins at all). A spin that gives up just before its answer
// arrives may have held that answer back: on an oversubscribed host the
// peer, or the softirq that delivers its packet, waits for this very CPU.
// Where that is so it happens at every spin, so only after kNearMisses such
// spins with none caught in between does spinning pause: 10 ms, doubling
// to 1 s while it goes on, so that a loaded host pays one such wait per
// period. A spin that catches its answer resets both. One near miss alone
// is a peer late by about the spin's length (its CPU taken for a moment, a
// benchmark printing); pausing for each of those put ranks on CPUs of
// their own to sleep in calls that needed no sleep (docs/tcp.md, "Spin
// pauses for a coincidence").
//
// Shared by the threads of one transport: plain atomics, and a race between
// two threads' verdicts costs at most one pause more or less.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace tandem {
namespace tcp {

class SpinJudge {
 public:
  static constexpr int kNearMisses = 3;
  // A sleep after a spin shorter than this means the answer came right
  // after the spin gave up.
  static constexpr std::chrono::microseconds kNearMiss{20};

  // Whether a sleep of `slept` after a spin was a near miss (the one rule,
  // used by gave_up and by the transport's counters).
  static bool near_miss(std::chrono::nanoseconds slept) { return slept <= kNearMiss; }

  // A spin gave up and the sleep after it lasted `slept`: the pause to
  // start now, in ms (0: none).
  int64_t gave_up(std::chrono::nanoseconds slept) {
    if (!near_miss(slept)) return 0;  // a real wait: spinning longer would not have helped
    if (near_misses_.fetch_add(1, std::memory_order_relaxed) + 1 < kNearMisses) return 0;
    const int64_t was = pause_ms_.load(std::memory_order_relaxed);
    const int64_t pause = std::min<int64_t>(was == 0 ? 10 : was * 2, 1000);
    pause_ms_.store(pause, std::memory_order_relaxed);
    return pause;
  }

  // A spin caught its answer.
  void caught() {
    pause_ms_.store(0, std::memory_order_relaxed);
    near_misses_.store(0, std::memory_order_relaxed);
  }

 private:
  std::atomic<int> near_misses_{0};   // since a spin last caught its answer
  std::atomic<int64_t> pause_ms_{0};  // the last pause (0: none since)
};

}  // namespace tcp
}  // namespace tandem
