// The rendezvous store's server: a key-value map served over TCP by one
// background thread (named "tandem-store"), run by tandem-run or by rank 0.
// Only connections that open with the job's token get in. It also notices a
// rank that drops its connection without saying goodbye, and fails the other
// ranks' waits at once with that rank's number instead of letting them run
// into their timeout.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "bootstrap/socket.h"

namespace tandem {

class TcpStoreServer {
 public:
  // A connection that has not sent its HELLO this long after connecting is
  // dropped, however many bytes of it trickled in: a stray or slow
  // connection cannot pin the server's resources (tests shorten it).
  static constexpr std::chrono::milliseconds kHelloTimeout{10000};

  // Listens on every address at port (0: an ephemeral port, see port()).
  // Throws SystemError when the port cannot be bound.
  TcpStoreServer(std::string token, uint16_t port = 0,
                 std::chrono::milliseconds hello_timeout = kHelloTimeout);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  uint16_t port() const { return port_; }
  bool accepts(const std::string& token) const { return token == token_; }
  // Waits until every rank that joined has left (BYE or closed), or the
  // deadline passes; true when none is left. Used by a rank 0 that hosts the
  // store so that it does not pull the store from under slower peers.
  bool wait_until_idle(Deadline deadline);
  // The same for the members of one session (store_protocol.h): a rank 0
  // that hosts the store and leaves waits for its session's peers only, as
  // fast ones may already have joined the next one.
  bool wait_until_session_left(uint32_t session, Deadline deadline);

  // What the store has served so far: requests handled, bytes through its
  // sockets and the CPU time of its thread, for the scale harness
  // (tandem-run --store-stats).
  struct Traffic {
    uint64_t requests = 0;
    uint64_t bytes_in = 0;
    uint64_t bytes_out = 0;
    uint64_t cpu_ns = 0;
  };
  Traffic traffic() const;

 private:
  struct Impl;
  void run();

  std::string token_;
  std::chrono::milliseconds hello_timeout_;
  Fd listen_fd_;
  Fd wake_fd_;
  uint16_t port_ = 0;
  std::unique_ptr<Impl> impl_;
  std::mutex mu_;
  std::condition_variable cv_;
  int members_ = 0;                          // authenticated connections that have not left
  std::map<uint32_t, int> session_members_;  // the same, by session
  std::atomic<uint64_t> requests_{0}, bytes_in_{0}, bytes_out_{0};
  std::thread thread_;
};

}  // namespace tandem
