// Wake-ups among the local ranks of a node for a loop that runs rounds with
// all of them (the runtime's negotiation): a rank with work asks for the next
// round and the others, asleep on a futex in the shared segment, wake at
// once. Without it an idle rank must poll (run an empty round on a timer) so
// that peers with work are not held up, which costs latency and CPU.
//
// Rounds are numbered from 1 and every rank runs the same rounds in the same
// order, so "a round past the ones I have run" is the whole protocol: the
// segment holds the highest round any rank asked for (a monotone maximum, so
// two ranks asking at once cannot lose a request), each rank sleeps on its
// own futex word, and a rank that asks wakes only the ranks that sleep.
// The same word wakes a rank's waiter from its own process (work enqueued
// there), so the waiter sleeps on one thing.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "shm/control.h"

namespace tandem {

class Doorbell {
 public:
  Doorbell(ControlBlock* control, int local_rank, int local_size);

  // Asks every local rank for round `round` (and all before it). Returns
  // whether this call raised the node's request (no rank had asked for it
  // yet): across nodes that rank tells the others (transport/tcp/wake_relay.h).
  bool request(uint64_t round);
  // A request that came from another node: raises it and wakes every local
  // rank, this process's too.
  void relay(uint64_t round);
  uint64_t requested() const;
  // Wakes this rank's own waiter (from any thread of this process).
  void poke();
  // One thread per rank: sleeps until some rank asked for a round past
  // `done` (returns true), or `ready()` holds, or `until` passed (false).
  // `ready` is checked after this rank is marked asleep, so a poke() that
  // follows the change ready() reads is never lost.
  bool wait(uint64_t done, std::chrono::steady_clock::time_point until,
            const std::function<bool()>& ready);

 private:
  void ring(int rank);

  ControlBlock* control_;
  int me_;
  int n_;
};

}  // namespace tandem
