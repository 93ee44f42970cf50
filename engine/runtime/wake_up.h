// The runtime's timing of wake-ups and rounds (wake_up.cc, cycle.cc): how
// long the batching window waits for more enqueues, how often an idle rank
// looks at its peers, and the clock helpers. Private to engine/runtime.
#pragma once

#include <chrono>
#include <cstdint>

namespace tandem::runtime {

using Clock = std::chrono::steady_clock;

// The batching window closes once no tensor was enqueued for this long: a
// framework that hands over a step's gradients back to back (a few µs
// apart, from C or Python) gets them into one cycle, and the cycle does not
// wait out TANDEM_CYCLE_TIME for tensors that are not coming. Most
// frameworks wait on a handle right after enqueueing, which closes the
// window at once (BlockedWaiter); the gap matters for the others, and must
// outlast the moment the runtime thread, woken by the first enqueue, takes
// the enqueuing thread's CPU: a gap shorter than that hop split one step's
// tensors into two cycles on a busy machine (docs/runtime.md).
constexpr auto kQuietGap = std::chrono::microseconds(100);
// How often an idle rank that peers can wake looks at the stall inspector
// (more often when the stall check time is short).
constexpr auto kIdleCheck = std::chrono::seconds(1);
// How often a rank whose tensors wait for peers runs a cycle anyway: a peer
// that died after the cycle that announced them would never ask for one,
// and only a collective notices it (the data path's liveness checks).
constexpr auto kPendingCheck = std::chrono::milliseconds(100);
// Across nodes a relayed wake-up can be lost (UDP): a rank asleep this long
// runs a round anyway, which bounds the delay a lost one causes (and wakes
// every rank: an idle job runs 40 rounds a second instead of one per
// TANDEM_IDLE_WAIT per rank).
constexpr auto kRelayFallback = std::chrono::milliseconds(25);
// Across nodes, with the relay: for this long after the last round in which
// any rank announced something, idle ranks keep polling every
// TANDEM_IDLE_WAIT as without it. A step's rounds follow each other
// closely, and a wake-up through the relay costs a thread hop on every node,
// so a step whose every round went through it was slower than one that
// polled (docs/runtime.md). After it they sleep until a relayed request;
// a rank starting a round tells the other nodes once half of it has passed.
constexpr auto kStayAwake = std::chrono::milliseconds(20);

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

template <typename D>
inline Clock::duration ms(D v) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(v));
}

}  // namespace tandem::runtime
