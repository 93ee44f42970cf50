#include "transport/tcp/socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/errors.h"
#include "transport/tcp/descriptors.h"

namespace tandem {
namespace tcp {

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

int SockAddr::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
}

void SockAddr::set_port(int port) {
  const auto p = htons(static_cast<uint16_t>(port));
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = p;
  else reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = p;
}

std::string to_string(const SockAddr& addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (addr.family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr.storage)->sin_addr, host,
              sizeof host);
    return std::string(host) + ":" + std::to_string(addr.port());
  }
  if (addr.family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&addr.storage)->sin6_addr, host,
              sizeof host);
    return "[" + std::string(host) + "]:" + std::to_string(addr.port());
  }
  return "<address family " + std::to_string(addr.family()) + ">";
}

Fd listen_on(SockAddr& addr) {
  Fd fd(::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    const int err = errno;
    throw SystemError("tcp: socket() for listening on " + to_string(addr) + descriptor_advice(err),
                      err);
  }
  if (::bind(fd.get(), addr.get(), addr.len) != 0)
    throw SystemError("tcp: bind " + to_string(addr), errno);
  // The backlog holds every group member plus some foreign connections while
  // the handshake loop catches up; the kernel caps it at somaxconn.
  if (::listen(fd.get(), 512) != 0) throw SystemError("tcp: listen on " + to_string(addr), errno);
  addr.len = sizeof addr.storage;
  if (::getsockname(fd.get(), addr.get(), &addr.len) != 0)
    throw SystemError("tcp: getsockname", errno);
  return fd;
}

Fd start_connect(const SockAddr& addr) {
  Fd fd(::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    const int err = errno;
    throw SystemError("tcp: socket() to connect to " + to_string(addr) + descriptor_advice(err),
                      err);
  }
  if (::connect(fd.get(), addr.get(), addr.len) != 0 && errno != EINPROGRESS)
    throw SystemError("tcp: connect to " + to_string(addr), errno);
  return fd;
}

Fd accept_from(int listener, SockAddr& peer) {
  peer.len = sizeof peer.storage;
  const int fd = ::accept4(listener, peer.get(), &peer.len, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd >= 0) return Fd(fd);
  switch (errno) {
    case EAGAIN:
    case EINTR:
    case ECONNABORTED:
    case EPROTO:
    case EPERM: return Fd();
    default: {
      const int err = errno;
      throw SystemError("tcp: accept" + descriptor_advice(err), err);
    }
  }
}

void configure_data_socket(int fd) {
  int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
    throw SystemError("tcp: setsockopt TCP_NODELAY", errno);
}

bool paces_by_estimate(int fd) {
  char name[32] = {};
  socklen_t len = sizeof name - 1;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return false;
  return std::strncmp(name, "bbr", 3) == 0;
}

int pending_error(int fd) {
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

}  // namespace tcp
}  // namespace tandem
