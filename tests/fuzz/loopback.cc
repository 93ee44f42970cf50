#include "loopback.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fuzz_target.h"

namespace tandem::fuzz {

namespace {

// Long enough that only a server that stopped handling its connection runs
// into it, even on a loaded machine under the sanitizers.
constexpr int kQuietMs = 20000;

sockaddr_in loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

void close_with_reset(int fd) {
  linger l{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  close(fd);
}

// Sends data (then shuts the sending side) while reading whatever comes
// back, until the peer closes or resets.
void exchange(int fd, const uint8_t* data, size_t size) {
  size_t sent = 0;
  bool shut = false;
  uint8_t buf[65536];
  for (;;) {
    if (sent == size && !shut) {
      shutdown(fd, SHUT_WR);
      shut = true;
    }
    pollfd p{fd, static_cast<short>(POLLIN | (shut ? 0 : POLLOUT)), 0};
    const int n = poll(&p, 1, kQuietMs);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) fuzz_fail("the server neither answered nor closed the connection in time");
    if (n < 0) fuzz_fail("poll on the loopback connection failed");
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t k = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (k == 0) return;                                      // closed: all handled
      if (k < 0 && errno != EAGAIN && errno != EINTR) return;  // reset after a refusal
    }
    if (!shut && (p.revents & POLLOUT)) {
      const ssize_t k = send(fd, data + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (k > 0) sent += static_cast<size_t>(k);
      else if (k < 0 && errno != EAGAIN && errno != EINTR) sent = size;  // it closed on us
    }
  }
}

}  // namespace

void converse(uint16_t port, const uint8_t* data, size_t size) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) fuzz_fail("socket() for the loopback connection failed");
  const sockaddr_in a = loopback(port);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) != 0)
    fuzz_fail("the server under fuzz refused the loopback connection");
  exchange(fd, data, size);
  close_with_reset(fd);
}

FakeServer::FakeServer() {
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = loopback(0);
  socklen_t len = sizeof(a);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      listen(listen_fd_, 4) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    fuzz_fail("cannot listen on the loopback for the fake server");
  port_ = ntohs(a.sin_port);
}

FakeServer::~FakeServer() { close(listen_fd_); }

void FakeServer::serve_once(const uint8_t* data, size_t size) {
  pollfd p{listen_fd_, POLLIN, 0};
  if (poll(&p, 1, kQuietMs) != 1) fuzz_fail("the client under fuzz did not connect in time");
  const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) fuzz_fail("accept on the fake server failed");
  exchange(fd, data, size);
  close_with_reset(fd);
}

}  // namespace tandem::fuzz
