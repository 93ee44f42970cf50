// Round requests between nodes: the runtime's side of a wake-up relay
// (transport/tcp/wake_relay.h is the one over UDP). Inside a node the ranks
// wake each other through the shared segment (shm/doorbell.h); across nodes
// a relay carries a request for round N to the other nodes, where it rings
// their doorbell. Abstract here, so that the runtime never names sockets and
// the TCP transport never names shared memory: the caller hands the relay
// what ringing this node's doorbell means.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "bootstrap/bootstrap.h"

namespace tandem {

class RoundRelay {
 public:
  virtual ~RoundRelay() = default;
  // Tells every other node that round `round` was asked for. Never blocks.
  virtual void forward(uint64_t round) = 0;
};

// Called with each round another node asked for (from the relay's thread).
using RingLocal = std::function<void(uint64_t round)>;

// Makes this rank's relay: a collective over `world`. Returns null unless
// every rank wants one (`wanted`), so that a setting that differs between
// ranks cannot leave some of them asleep.
using RoundRelayFactory = std::function<std::unique_ptr<RoundRelay>(
    Bootstrap& world, RingLocal ring, bool wanted, std::chrono::milliseconds timeout)>;

}  // namespace tandem
