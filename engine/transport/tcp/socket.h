// Sockets for the TCP transport: an owning file descriptor (RAII, every fd is
// created close-on-exec so a forked training script never inherits a rank's
// connections) and the few socket calls the transport needs, each turning
// errno into a SystemError that says what was attempted on which address.
#pragma once

#include <sys/socket.h>

#include <string>
#include <utility>

namespace tandem {
namespace tcp {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

// A socket address of either family, with its length.
struct SockAddr {
  sockaddr_storage storage{};
  socklen_t len = 0;
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
  sockaddr* get() { return reinterpret_cast<sockaddr*>(&storage); }
  int family() const { return storage.ss_family; }
  int port() const;
  void set_port(int port);
};

// "192.0.2.2:4242" or "[fd00::2]:4242".
std::string to_string(const SockAddr& addr);

// Non-blocking, close-on-exec TCP listener bound to `addr` (port 0 picks one).
// The actual address (with the port) is written back to `addr`.
Fd listen_on(SockAddr& addr);

// Non-blocking, close-on-exec TCP socket with a connect to `addr` in progress
// (or done). Errors other than EINPROGRESS throw.
Fd start_connect(const SockAddr& addr);

// accept4 with SOCK_NONBLOCK|SOCK_CLOEXEC; returns an invalid Fd on EAGAIN and
// on errors that concern only the connection being accepted (it vanished).
Fd accept_from(int listener, SockAddr& peer);

// TCP_NODELAY: every message is flushed at once (collectives are
// latency-bound at small sizes and the transport already writes whole
// messages). Buffer sizes are left to Linux's autotuning on purpose: it grows
// them up to net.ipv4.tcp_wmem/tcp_rmem (4 MiB / 32 MiB on Debian 12), while
// SO_SNDBUF/SO_RCVBUF would switch autotuning off and are capped by
// net.core.wmem_max/rmem_max; explicit 4 and 16 MiB buffers measured no
// faster on loopback (docs/tcp.md).
void configure_data_socket(int fd);

// Whether the socket's congestion control paces every flow by its own
// bandwidth estimate (BBR in any version: the name starts with "bbr"), read
// with getsockopt(TCP_CONGESTION); false where the name cannot be read.
// Loss-based controls (cubic, the Linux default; reno; dctcp) send a piece
// at once as far as the window allows. The transport sizes its sendrecv
// pieces by it (tcp_transport.cc, docs/tcp.md).
bool paces_by_estimate(int fd);

// SO_ERROR after a non-blocking connect: 0 when connected.
int pending_error(int fd);

}  // namespace tcp
}  // namespace tandem
