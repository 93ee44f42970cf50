// Small socket helpers for the rendezvous store: an owning fd, host:port
// parsing, and connect/send/recv that all end at a deadline. Sockets are
// non-blocking; every wait is a poll() bounded by the deadline.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tandem {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// Milliseconds left until the deadline, at least 0 (for poll).
int ms_left(Deadline deadline);

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset();

 private:
  int fd_ = -1;
};

struct HostPort {
  std::string host;
  uint16_t port = 0;
  std::string str() const;
};

// "host:port" or "[v6addr]:port"; what names the source in errors
// (e.g. "TANDEM_RENDEZVOUS_ADDR"). Throws BootstrapError.
HostPort parse_host_port(const std::string& text, const std::string& what);

// Listens on every address of this host at port (0: an ephemeral port).
// Returns the socket; *bound_port receives the port actually bound.
Fd listen_any(uint16_t port, uint16_t* bound_port);

// Connects, retrying refused/unreachable attempts until the deadline (the
// server may not be up yet). Throws BootstrapError naming the address and the
// last error.
Fd connect_until(const HostPort& addr, Deadline deadline);

// Whole-buffer I/O until the deadline. send_all/recv_all return false on
// timeout; throw PeerLostError when the other side closed or reset.
bool send_all(int fd, const void* data, size_t len, Deadline deadline, const std::string& peer);
bool recv_all(int fd, void* data, size_t len, Deadline deadline, const std::string& peer);

void set_nonblocking(int fd);
void set_nodelay(int fd);

}  // namespace tandem
