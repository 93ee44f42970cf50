#include "bootstrap/socket.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "common/errors.h"

namespace tandem {

int ms_left(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  if (left.count() > 1 << 30) return 1 << 30;
  return static_cast<int>(left.count());
}

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string HostPort::str() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

HostPort parse_host_port(const std::string& text, const std::string& what) {
  auto bad = [&](const std::string& why) {
    return BootstrapError(what + "='" + text + "' " + why +
                          ": expected host:port, e.g. node01:29500 or [fe80::1]:29500");
  };
  HostPort hp;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      throw bad("has an unclosed IPv6 bracket or no port");
    hp.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos) throw bad("has no port");
    hp.host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (hp.host.find(':') != std::string::npos) throw bad("has an IPv6 address without brackets");
  }
  if (hp.host.empty()) throw bad("has no host");
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    throw bad("has a port that is not a number");
  int p = std::stoi(port);
  if (p < 1 || p > 65535) throw bad("has a port outside 1..65535");
  hp.port = static_cast<uint16_t>(p);
  return hp;
}

void set_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    throw SystemError("fcntl O_NONBLOCK", errno);
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // best effort: latency only
}

Fd listen_any(uint16_t port, uint16_t* bound_port) {
  // Try IPv6 dual-stack first so that both families reach the store, then
  // IPv4 for hosts without IPv6.
  int last_err = 0;
  for (int family : {AF_INET6, AF_INET}) {
    Fd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) {
      last_err = errno;
      continue;
    }
    int one = 1, zero = 0;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_storage ss{};
    socklen_t len;
    if (family == AF_INET6) {
      setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      a->sin6_family = AF_INET6;
      a->sin6_addr = in6addr_any;
      a->sin6_port = htons(port);
      len = sizeof(*a);
    } else {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      a->sin_family = AF_INET;
      a->sin_addr.s_addr = htonl(INADDR_ANY);
      a->sin_port = htons(port);
      len = sizeof(*a);
    }
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 ||
        ::listen(fd.get(), 1024) != 0) {
      last_err = errno;
      if (last_err == EADDRINUSE) break;  // the other family would fail the same way
      continue;
    }
    len = sizeof(ss);
    getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
    *bound_port = ntohs(family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    return fd;
  }
  throw SystemError("rendezvous store: cannot listen on port " + std::to_string(port), last_err);
}

namespace {

// One non-blocking connect attempt bounded by the deadline; returns the
// connected socket or sets *err.
Fd try_connect(const addrinfo* ai, Deadline deadline, int* err) {
  Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
  if (!fd) {
    *err = errno;
    return Fd();
  }
  if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0) return fd;
  if (errno != EINPROGRESS) {
    *err = errno;
    return Fd();
  }
  pollfd p{fd.get(), POLLOUT, 0};
  int n = ::poll(&p, 1, ms_left(deadline));
  if (n <= 0) {
    *err = n == 0 ? ETIMEDOUT : errno;
    return Fd();
  }
  int so_err = 0;
  socklen_t len = sizeof(so_err);
  getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_err, &len);
  if (so_err != 0) {
    *err = so_err;
    return Fd();
  }
  return fd;
}

}  // namespace

Fd connect_until(const HostPort& addr, Deadline deadline) {
  std::string last = "no attempt made";
  auto backoff = std::chrono::milliseconds(10);
  for (;;) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = getaddrinfo(addr.host.c_str(), std::to_string(addr.port).c_str(), &hints, &res);
    if (rc != 0) {
      last = std::string("cannot resolve host: ") + gai_strerror(rc);
    } else {
      for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
        int err = 0;
        Fd fd = try_connect(ai, deadline, &err);
        if (fd) {
          freeaddrinfo(res);
          set_nodelay(fd.get());
          return fd;
        }
        last = std::strerror(err);
      }
      freeaddrinfo(res);
    }
    if (Clock::now() + backoff >= deadline) break;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(250));
  }
  throw BootstrapError("could not reach the rendezvous store at " + addr.str() +
                       " before the deadline (last error: " + last +
                       "): check TANDEM_RENDEZVOUS_ADDR and that the store (rank 0 or "
                       "tandem-run) is running");
}

bool send_all(int fd, const void* data, size_t len, Deadline deadline, const std::string& peer) {
  auto* p = static_cast<const uint8_t*>(data);
  while (len > 0) {
    ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pf{fd, POLLOUT, 0};
      int r = ::poll(&pf, 1, ms_left(deadline));
      if (r == 0) return false;
      if (r < 0 && errno != EINTR) throw SystemError("poll " + peer, errno);
      continue;
    }
    throw PeerLostError("the connection to " + peer + " was lost: " + std::strerror(errno));
  }
  return true;
}

bool recv_all(int fd, void* data, size_t len, Deadline deadline, const std::string& peer) {
  auto* p = static_cast<uint8_t*>(data);
  while (len > 0) {
    ssize_t n = ::recv(fd, p, len, 0);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) throw PeerLostError(peer + " closed the connection");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd pf{fd, POLLIN, 0};
      int r = ::poll(&pf, 1, ms_left(deadline));
      if (r == 0) return false;
      if (r < 0 && errno != EINTR) throw SystemError("poll " + peer, errno);
      continue;
    }
    throw PeerLostError("the connection to " + peer + " was lost: " + std::strerror(errno));
  }
  return true;
}

}  // namespace tandem
