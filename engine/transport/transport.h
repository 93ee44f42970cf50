// The transport interface: moves bytes between the ranks of one group. This
// folder holds only abstract classes; each concrete transport lives in its own
// subfolder (memory/ for ranks as threads, tcp/ between nodes) and implements
// this same interface. Collectives include this header, never a concrete one.
//
// Shared memory inside a node is not a point-to-point transport: the
// node-local collectives work on a shared segment directly (see shm/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tandem {

class Transport {
 public:
  virtual ~Transport() = default;

  // This process's index in the group and the group's size. Peers are named
  // by group index, 0..size()-1.
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Messages between two peers are matched in the order they were sent, per
  // direction. send() returns once data may be reused; recv() once bytes have
  // arrived. Both throw PeerLostError naming the peer when it dies or closes,
  // TimeoutError when it stays silent past the transport's timeout, and
  // AbortedError after abort().
  virtual void send(int peer, const void* data, size_t bytes) = 0;
  virtual void recv(int peer, void* data, size_t bytes) = 0;

  // Sends to `to` and receives from `from` at the same time, so that rings
  // and pairwise exchanges never deadlock on full socket buffers.
  virtual void sendrecv(int to, const void* send_data, size_t send_bytes, int from, void* recv_data,
                        size_t recv_bytes) = 0;

  // Fails every pending and future call with AbortedError(why). Safe to call
  // from another thread; used to tear down after a peer was lost elsewhere.
  virtual void abort(const std::string& why) = 0;

  // What this transport has done so far, for benchmarks and counters:
  // bytes through its calls (payload and framing) and the peers it holds a
  // connection to. Zero where it has no such notion (the memory transport).
  struct Traffic {
    uint64_t bytes_sent = 0;
    uint64_t bytes_received = 0;
    int connections = 0;
  };
  virtual Traffic traffic() const { return {}; }

  // What this transport is, for the log ("tcp, group of 2 (this is rank 1
  // ... at 10.0.0.2:41723; ...)"): never on a hot path.
  virtual std::string describe() const {
    return "a transport of " + std::to_string(size()) + " ranks";
  }
};

}  // namespace tandem
