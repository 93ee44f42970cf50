// Connection set-up for one TCP transport: turns the group's published
// endpoints into authenticated sockets, for the peers the algorithms plan at
// set-up (connect.cc) and for any other peer on first use (tcp_transport.cc).
//
// Group index i connects to j > i and accepts from j < i, so each pair has
// exactly one connection and nobody has to break ties; whichever end needs
// the pair first, the lower one opens it. Handshakes (hello, ack: wire.h)
// never block: serve() moves every one of them, the listener, and the
// accepted-but-unidentified sockets on as far as they go, and wait_fd() (an
// epoll set over all of them and a retry timer) becomes readable when there
// is more to do. A transport call that waits for anything polls that fd as
// well, so a rank inside any call of the transport answers a peer that
// connects to it; a foreign connection that sends nothing or garbage waits
// in its own slot and never delays the members: it is closed and logged
// (with its address) as soon as it is seen to be wrong, or after the
// timeout. The listener stays open while some peer may still connect (not
// every pair is connected) and closes once none can, or on failure: a
// connect to a rank whose transport failed is then refused by the kernel,
// which the connecting rank reports as that rank being lost.
//
// Thread-safe: every call may come from any thread (one mutex; socket_of()
// is lock-free).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/tcp/socket.h"
#include "transport/tcp/wire.h"

namespace tandem {
namespace tcp {

struct ConnectPlan {
  int world_rank = 0;           // this process
  int index = 0;                // this process's group index
  std::vector<int> members;     // world ranks by group index
  std::vector<SockAddr> addrs;  // listening endpoint by group index
  Secret secret{};
  // A foreign connection silent for this long is dropped.
  std::chrono::milliseconds timeout{0};
};

class Connector {
 public:
  Connector(Fd listener, ConnectPlan plan);
  ~Connector();
  Connector(const Connector&) = delete;
  Connector& operator=(const Connector&) = delete;

  int size() const { return static_cast<int>(plan_.members.size()); }
  int index() const { return plan_.index; }
  // Peer j's connected socket, or -1 while it has none.
  int socket_of(int j) const { return sockets_[j].load(std::memory_order_acquire); }
  // Connected peers (sockets this connector holds).
  int connected() const { return connected_.load(std::memory_order_relaxed); }
  // Starts connecting peer j when this rank opens the pair (j > index) and
  // nothing is under way; otherwise only notes that j is awaited.
  void want(int j);
  // Moves every handshake on without waiting. Throws PeerLostError when a
  // peer this rank connects to refused (after set-up: its listener is gone,
  // so it died or its transport failed) or closed before its ack,
  // BootstrapError on a wrong ack, SystemError (with the descriptor limit's
  // advice on EMFILE).
  void serve();
  // Readable when serve() has something to do.
  int wait_fd() const { return epoll_.get(); }
  // Whether anything can still happen here: the listener is open or a
  // handshake is under way. A transport polls wait_fd() only then.
  bool active() const { return active_.load(std::memory_order_acquire); }
  // Set-up is over: from now on a refused connect means the peer is gone.
  void end_setup();
  // Stops accepting: the listener closes (the kernel refuses later
  // connects), unidentified connections are closed and logged.
  void stop_listening(const std::string& why);
  // After a failure: stop listening, drop every handshake, and shut every
  // connected socket down so that the peers' calls fail at once.
  void shut_down();
  // "rank 3 (world rank 7) at 127.0.0.1:4242".
  std::string who(int j) const;
  // Why peer j has no socket yet, for a timeout message.
  std::string waiting_for(int j);

 private:
  struct Outgoing {
    enum State { kWaitRetry, kConnecting, kSending, kAwaitAck };
    Fd fd;
    State state = kWaitRetry;
    size_t sent = 0;
    uint8_t ack[Ack::kSize] = {};
    size_t got = 0;
    std::chrono::steady_clock::time_point retry_at{};
    std::chrono::milliseconds backoff{10};
    std::string last_error = "not tried yet";
  };
  struct Incoming {
    Fd fd;
    SockAddr from;
    uint8_t hello[Hello::kSize] = {};
    size_t got = 0;
    std::chrono::steady_clock::time_point since{};
  };

  void start_connect(int j, Outgoing& o);
  bool step_outgoing(int j, Outgoing& o);  // true: done (connected)
  void accept_all();
  bool step_incoming(Incoming& in);  // false: done with it (connected or dropped)
  void deliver(int j, Fd fd);
  void watch(int fd, uint32_t events);
  void unwatch(int fd);
  void arm_timer();
  void update_active();
  void close_listener_locked(const std::string& why);
  void reject(const Incoming& in, const std::string& why);

  ConnectPlan plan_;
  std::vector<std::string> addresses_;
  std::mutex mu_;
  Fd listener_;
  Fd epoll_;
  Fd timer_;
  std::unique_ptr<std::atomic<int>[]> sockets_;
  std::vector<Fd> owned_;  // by group index
  std::atomic<int> connected_{0};
  std::map<int, Outgoing> outgoing_;
  std::deque<Incoming> incoming_;
  std::vector<bool> awaited_;  // lower peers this rank waits to hear from
  std::atomic<bool> active_{false};
  bool after_setup_ = false;
  bool down_ = false;
  std::array<uint8_t, Hello::kSize> hello_bytes_{};
};

// A warning of the tcp subsystem naming this rank's world rank (the rank of
// the job may differ: a process set's connections). Security events
// (rejected connections) are always logged, whatever TANDEM_LOG says
// (common/log.h).
void log_warning(int world_rank, const std::string& message);

}  // namespace tcp
}  // namespace tandem
