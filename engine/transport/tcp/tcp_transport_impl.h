// The TCP transport behind connect_tcp(): one connected socket per peer,
// moved by the calling thread with non-blocking I/O and poll().
//
// Why poll in the caller rather than a send thread per call or an I/O thread:
// sendrecv() needs both directions to make progress at once (a ring where
// everyone sends before receiving would otherwise deadlock on full socket
// buffers); one poll over the send socket, the receive socket and an abort
// eventfd does that without handing buffers to another thread, without a
// context switch per message, and keeps every wait in one place with one
// deadline rule. Concurrent calls from several threads are allowed; calls
// that use the same peer in the same direction are serialized.
//
// Before sleeping in poll() a call spins: it retries its non-blocking reads
// and writes until `spin` has passed since the last byte moved. A small
// message's answer then arrives while the caller is still awake, so a round
// trip costs the wire and two system calls, not the wake-up of a halted
// vCPU. Spinning only pays while the caller has a CPU to itself: on an
// oversubscribed host the spin holds back whoever must run on this CPU to
// deliver the answer (the peer, the softirq moving its packet). So a call
// spins only while the host has no more runnable threads than CPUs
// (spare_cpu in the .cc), and when answers keep coming right after a spin
// gave up, the transport stops spinning for a while (spin_judge.h;
// docs/tcp.md has the figures).
//
// Deadlines: a transfer fails with TimeoutError when it makes no progress for
// `timeout` (TANDEM_TIMEOUT): a stopped or hung peer is caught, a large
// message on a slow link is not. A peer that closes or resets its socket (it
// died, or its transport failed) fails the call with PeerLostError at once.
//
// Connections: the peers the algorithms plan are connected at set-up
// (connect.cc); a call to any other peer first connects it (connector.h),
// and a call that waits for anything also answers peers connecting to this
// rank, so a rank inside any call of the transport can be reached.
//
// Failure is sticky and transport-wide: the first error (lost peer, timeout,
// mismatch, abort) is stored, every pending call is woken through the
// eventfd and fails with it, later calls fail with it too, every socket is
// shut down and the listener closed, so that the peers' pending calls fail
// promptly as well instead of waiting for their own timeout, and so that a
// peer connecting later is refused. A rank without a socket to the rank that
// died learns of it this way, through the partners it waits on: each rank
// that fails shuts down its sockets, which fails the ranks waiting on it
// (docs/tcp.md, "Failure across partners"). After a failure the byte streams
// are out of step, so nothing could be resumed safely anyway.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/tcp/connector.h"
#include "transport/tcp/socket.h"
#include "transport/tcp/spin_judge.h"
#include "transport/transport.h"

namespace tandem {
namespace tcp {

struct PeerLink {
  std::mutex send_mu;
  std::mutex recv_mu;
  // Whether its socket's congestion control paces by its own estimate,
  // read on the first sendrecv with it (-1: not yet).
  std::atomic<int> paces{-1};
};

class TcpTransport : public Transport {
 public:
  // `links` holds the connections made at set-up and makes the others on
  // first use; null for a group of one.
  TcpTransport(int rank, std::vector<int> members, std::unique_ptr<Connector> links,
               std::chrono::milliseconds timeout,
               std::chrono::microseconds spin = std::chrono::microseconds(0), size_t piece = 0);
  ~TcpTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(peers_.size()); }
  void send(int peer, const void* data, size_t bytes) override;
  void recv(int peer, void* data, size_t bytes) override;
  void sendrecv(int to, const void* send_data, size_t send_bytes, int from, void* recv_data,
                size_t recv_bytes) override;
  void abort(const std::string& why) override;
  Traffic traffic() const override;
  std::string describe() const override;

  struct Transfer;  // one direction of one call, defined in the .cc

 private:
  enum class Kind { kPeerLost, kTimeout, kMismatch, kAborted };
  void check_peer(int peer, const char* what) const;
  void run(Transfer* transfers, int count);
  // Connects the transfers' peers that have no socket yet (first use).
  void connect_peers(Transfer* transfers, int count, std::chrono::steady_clock::time_point start);
  // links_->serve(), its errors made this transport's failure.
  void serve_links();
  bool progress(Transfer& t);  // true when complete
  // The piece of a sendrecv between the peers of ts[0] and ts[1]
  // (sendrecv_piece, from their sockets' congestion controls).
  size_t piece_of(const Transfer* ts);
  void judge_spin(std::chrono::steady_clock::time_point slept,
                  std::chrono::steady_clock::time_point woke);
  // TANDEM_TCP_STATS=1: how calls waited, printed when the transport goes.
  struct Stats {
    bool on = false;
    std::atomic<uint64_t> calls{0}, no_wait{0}, caught_spinning{0}, calls_that_slept{0}, sleeps{0},
        slept_ns{0}, near_misses{0}, penalties{0}, paused{0}, no_spare_cpu{0};
  };
  void tally(std::atomic<uint64_t>& c) {
    if (stats_.on) c.fetch_add(1, std::memory_order_relaxed);
  }
  [[noreturn]] void fail(Kind kind, const std::string& message);
  [[noreturn]] void fail(std::exception_ptr error);
  void throw_if_failed();
  [[noreturn]] void throw_stored();
  std::string who(int peer) const;

  const int rank_;
  const std::vector<int> members_;
  const std::chrono::milliseconds timeout_;
  const std::chrono::microseconds spin_;
  const size_t piece_;  // TANDEM_TCP_PIECE_BYTES; 0: by congestion control
  std::unique_ptr<Connector> links_;
  std::vector<std::unique_ptr<PeerLink>> peers_;
  Fd wake_;  // eventfd, readable once the transport has failed

  // steady_clock ticks until which no call spins. See judge_spin.
  std::atomic<int64_t> no_spin_until_{0};
  SpinJudge spin_judge_;
  Stats stats_;
  std::atomic<uint64_t> bytes_sent_{0}, bytes_received_{0};
  std::atomic<bool> failed_{false};
  std::mutex failure_mu_;
  std::exception_ptr failure_;
};

}  // namespace tcp
}  // namespace tandem
