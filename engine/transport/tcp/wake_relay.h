// Round requests between nodes for the runtime over UDP (the RoundRelay of
// transport/round_relay.h; shm/doorbell.h does it inside a node). Without it an idle rank of a job
// that spans nodes has to run an empty round every TANDEM_IDLE_WAIT so that peers with work are not
// held up, a share of a core on every idle rank that grows with the job
// (docs/runtime.md, "How a step runs"). With it every rank sleeps
// on its node's doorbell, as on one node, and the first rank of a node to
// ask for a round tells the other nodes.
//
// Each node's first local rank listens on a UDP socket at the address the
// TCP transport would use and runs a thread (`tandem-relay`) that relays
// each request it receives to its node's doorbell (the RingLocal it is
// given). A datagram is the receiving node's 16-byte key (random, published with the address
// through the bootstrap, so only the job's own ranks can wake it), the round and the node it
// started from. It travels down a binomial tree rooted at that node: the origin sends ceil(log2 n)
// datagrams and each relay passes it on to its own subtree, so no rank sends more than log2 n per
// round (sending to every node from the origin cost 10,000 sendto()s on the runtime thread of a
// 10,000-node job before its round could start), and the last node hears of it after log2 n hops.
// UDP may drop a datagram: the runtime still runs a round when its sleep
// times out (kRelayFallback in runtime/wake_up.h), which bounds that delay.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "transport/round_relay.h"
#include "transport/tcp/socket.h"

namespace tandem {
namespace tcp {

class WakeRelay : public RoundRelay {
 public:
  using Key = std::array<uint8_t, 16>;

  // Collective over the world (one allgather of `world`): every rank calls
  // it with what rings its node's doorbell and whether it wants a relay
  // (TANDEM_WAKE_RELAY). Returns null unless every rank wants one, so that
  // a setting that differs between ranks cannot leave some of them asleep.
  // `listen` is the address to listen on (port 0); only node leaders (local
  // rank 0) use it. Throws SystemError when the socket cannot be made.
  static std::unique_ptr<WakeRelay> create(Bootstrap& world, RingLocal ring, bool wanted,
                                           SockAddr listen, std::chrono::milliseconds timeout);
  ~WakeRelay() override;
  WakeRelay(const WakeRelay&) = delete;
  WakeRelay& operator=(const WakeRelay&) = delete;

  // Tells every other node that round `round` was asked for. Never blocks;
  // a datagram the kernel cannot take now is dropped (the fallback covers it,
  // and the dropped datagram's subtree with it).
  void forward(uint64_t round) override;

  // Datagrams accepted by this node's relay, datagrams this process sent,
  // and where it listens (node leaders; tests).
  uint64_t relayed() const { return relayed_.load(); }
  uint64_t sent() const { return sent_.load(); }
  const SockAddr& listening_on() const { return address_; }

 private:
  explicit WakeRelay(RingLocal ring) : ring_(std::move(ring)) {}
  struct Peer {
    SockAddr addr;
    Key key{};
  };
  void serve();
  // Sends the round to the children of this node in the tree rooted at
  // node `origin`.
  void pass_on(uint64_t round, uint32_t origin);

  RingLocal ring_;
  Fd listener_;  // node leaders only
  Fd sender_;
  Fd stop_;    // eventfd that ends serve()
  Key key_{};  // what datagrams to this node must carry
  SockAddr address_;
  std::vector<Peer> peers_;  // every node's leader by node index (this one's unused)
  uint32_t node_ = 0;        // this node's index
  std::atomic<uint64_t> relayed_{0};
  std::atomic<uint64_t> sent_{0};
  std::thread thread_;
};

}  // namespace tcp

// The RoundRelayFactory of the TCP transport: a WakeRelay listening where
// the TCP transport would (interface.h).
std::unique_ptr<RoundRelay> connect_wake_relay(Bootstrap& world, RingLocal ring, bool wanted,
                                               std::chrono::milliseconds timeout);

}  // namespace tandem
