#include "transport/tcp/connector.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/errors.h"
#include "common/log.h"

namespace tandem {
namespace tcp {
namespace {

using Clock = std::chrono::steady_clock;

// Unidentified connections held at once while waiting for their hello, on
// top of one per lower member (each may connect at any moment: a full mesh
// of 128 ranks on one host had 127 in the backlog at once, and a fixed cap
// of 64 dropped members); beyond this the oldest is dropped, so a flood
// cannot exhaust file descriptors.
constexpr size_t kMaxForeign = 64;

}  // namespace

Connector::Connector(Fd listener, ConnectPlan plan)
    : plan_(std::move(plan)),
      listener_(std::move(listener)),
      sockets_(new std::atomic<int>[plan_.members.size()]),
      owned_(plan_.members.size()),
      awaited_(plan_.members.size(), false) {
  for (size_t j = 0; j < plan_.members.size(); ++j) {
    sockets_[j].store(-1, std::memory_order_relaxed);
    addresses_.push_back(to_string(plan_.addrs[j]));
  }
  Hello h;
  h.world_rank = plan_.world_rank;
  h.secret = plan_.secret;
  hello_bytes_ = encode_hello(h);
  epoll_ = Fd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) throw SystemError("tcp: epoll_create1", errno);
  timer_ = Fd(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!timer_.valid()) throw SystemError("tcp: timerfd_create", errno);
  watch(timer_.get(), EPOLLIN);
  if (listener_.valid()) watch(listener_.get(), EPOLLIN);
  update_active();
}

Connector::~Connector() {
  for (const auto& in : incoming_) reject(in, "was not answered before the transport closed");
}

std::string Connector::who(int j) const {
  return "rank " + std::to_string(j) + " (world rank " + std::to_string(plan_.members[j]) +
         ") at " + addresses_[j];
}

void Connector::watch(int fd, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.fd = fd;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) == 0) return;
  if (errno == EEXIST && ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &ev) == 0) return;
  throw SystemError("tcp: epoll_ctl", errno);
}

void Connector::unwatch(int fd) {
  if (fd >= 0) (void)::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

void Connector::update_active() {
  active_.store(!down_ && (listener_.valid() || !outgoing_.empty() || !incoming_.empty()),
                std::memory_order_release);
}

void Connector::reject(const Incoming& in, const std::string& why) {
  log_warning(plan_.world_rank, "rejected a connection from " + to_string(in.from) + ": " + why);
}

void Connector::want(int j) {
  std::lock_guard<std::mutex> lock(mu_);
  if (down_ || socket_of(j) >= 0) return;
  if (j < plan_.index) {
    awaited_[j] = true;
    return;
  }
  auto [it, fresh] = outgoing_.try_emplace(j);
  if (fresh) {
    start_connect(j, it->second);
    update_active();
  }
}

void Connector::start_connect(int j, Outgoing& o) {
  int err = 0;
  try {
    o.fd = tcp::start_connect(plan_.addrs[j]);
    configure_data_socket(o.fd.get());
  } catch (const SystemError& e) {
    if (e.code() == EMFILE || e.code() == ENFILE) throw;
    err = e.code();
    o.fd.reset();
  }
  if (err == 0) {
    o.state = Outgoing::kConnecting;
    o.last_error = "the connect is under way";
    watch(o.fd.get(), EPOLLOUT);
    return;
  }
  if (after_setup_ && err == ECONNREFUSED)
    throw PeerLostError("tcp: the connection to " + who(j) +
                        " was refused: the process died, or its transport failed or was closed");
  o.last_error = std::strerror(err);
  o.state = Outgoing::kWaitRetry;
  o.retry_at = Clock::now() + o.backoff;
  o.backoff = std::min(o.backoff * 2, std::chrono::milliseconds(500));
}

bool Connector::step_outgoing(int j, Outgoing& o) {
  if (o.state == Outgoing::kWaitRetry) {
    if (Clock::now() < o.retry_at) return false;
    start_connect(j, o);
    if (o.state == Outgoing::kWaitRetry) return false;
  }
  if (o.state == Outgoing::kConnecting) {
    pollfd p{o.fd.get(), POLLOUT, 0};
    if (::poll(&p, 1, 0) == 0) return false;
    const int err = pending_error(o.fd.get());
    if (err == EINPROGRESS) return false;
    if (err != 0) {
      // Not listening (yet, during set-up) or unreachable: try again, or
      // after set-up, when refused, the peer is gone.
      unwatch(o.fd.get());
      o.fd.reset();
      if (after_setup_ && err == ECONNREFUSED)
        throw PeerLostError("tcp: the connection to " + who(j) +
                            " was refused: the process died, or its transport failed or was "
                            "closed");
      o.last_error = std::strerror(err);
      o.state = Outgoing::kWaitRetry;
      o.retry_at = Clock::now() + o.backoff;
      o.backoff = std::min(o.backoff * 2, std::chrono::milliseconds(500));
      return false;
    }
    o.state = Outgoing::kSending;
  }
  if (o.state == Outgoing::kSending) {
    const ssize_t n = ::send(o.fd.get(), hello_bytes_.data() + o.sent, hello_bytes_.size() - o.sent,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
    if (n < 0)
      throw PeerLostError("tcp setup: " + who(j) +
                          " dropped the connection: " + std::strerror(errno));
    o.sent += static_cast<size_t>(n);
    if (o.sent < hello_bytes_.size()) return false;
    o.state = Outgoing::kAwaitAck;
    o.last_error = "connected, but the hello is not answered yet";
    watch(o.fd.get(), EPOLLIN);
  }
  const ssize_t n = ::recv(o.fd.get(), o.ack + o.got, Ack::kSize - o.got, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
  if (n <= 0)
    throw PeerLostError("tcp setup: " + who(j) +
                        " closed the connection instead of accepting it (" +
                        (n == 0 ? std::string("end of stream") : std::strerror(errno)) +
                        "): it died, its transport failed, or it belongs to another job; see "
                        "its log");
  o.got += static_cast<size_t>(n);
  if (o.got < Ack::kSize) return false;
  const std::string bad = check_ack(o.ack, o.got, plan_.members[j]);
  if (!bad.empty()) throw BootstrapError("tcp setup: " + who(j) + ": " + bad);
  unwatch(o.fd.get());
  deliver(j, std::move(o.fd));
  return true;
}

void Connector::accept_all() {
  const size_t cap = kMaxForeign + static_cast<size_t>(plan_.index);
  while (listener_.valid()) {
    Incoming in;
    in.fd = accept_from(listener_.get(), in.from);
    if (!in.fd.valid()) return;
    configure_data_socket(in.fd.get());
    in.since = Clock::now();
    watch(in.fd.get(), EPOLLIN);
    // A member's hello is usually there already: done with it at once.
    if (!step_incoming(in)) continue;
    if (incoming_.size() >= cap) {
      reject(incoming_.front(), "too many unidentified connections at once; dropping the oldest");
      unwatch(incoming_.front().fd.get());
      incoming_.pop_front();
    }
    incoming_.push_back(std::move(in));
  }
}

bool Connector::step_incoming(Incoming& in) {
  const ssize_t n = ::recv(in.fd.get(), in.hello + in.got, Hello::kSize - in.got, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
  auto drop = [&](const std::string& why) {
    reject(in, why);
    unwatch(in.fd.get());
    return false;
  };
  if (n <= 0)
    return drop(n == 0 ? "closed before sending a complete hello"
                       : std::string("connection error: ") + std::strerror(errno));
  in.got += static_cast<size_t>(n);
  Hello h;
  const std::string bad = check_hello(in.hello, in.got, &h);
  if (!bad.empty()) return drop(bad);
  if (in.got < Hello::kSize) return true;
  if (!same_secret(h.secret.data(), plan_.secret.data()))
    return drop("wrong secret: not a member of this job");
  const auto& m = plan_.members;
  const auto it = std::find(m.begin(), m.begin() + plan_.index, h.world_rank);
  if (it == m.begin() + plan_.index)
    return drop("claims world rank " + std::to_string(h.world_rank) +
                ", which is not a member of this group that connects to this rank");
  const int j = static_cast<int>(it - m.begin());
  if (socket_of(j) >= 0)
    return drop("claims world rank " + std::to_string(h.world_rank) + ", already connected");
  const auto ack = encode_ack(plan_.world_rank);
  // A fresh socket's send buffer is empty: 64 bytes always fit at once.
  if (::send(in.fd.get(), ack.data(), ack.size(), MSG_NOSIGNAL | MSG_DONTWAIT) !=
      static_cast<ssize_t>(ack.size()))
    throw PeerLostError("tcp setup: " + who(j) + " dropped the connection during the handshake");
  unwatch(in.fd.get());
  deliver(j, std::move(in.fd));
  return false;
}

void Connector::deliver(int j, Fd fd) {
  owned_[j] = std::move(fd);
  awaited_[j] = false;
  sockets_[j].store(owned_[j].get(), std::memory_order_release);
  connected_.fetch_add(1, std::memory_order_relaxed);
}

void Connector::arm_timer() {
  auto next = Clock::time_point::max();
  for (const auto& [j, o] : outgoing_)
    if (o.state == Outgoing::kWaitRetry) next = std::min(next, o.retry_at);
  for (const auto& in : incoming_) next = std::min(next, in.since + plan_.timeout);
  itimerspec spec{};
  if (next != Clock::time_point::max()) {
    const auto ns = std::max<int64_t>(
        1, std::chrono::duration_cast<std::chrono::nanoseconds>(next - Clock::now()).count());
    spec.it_value.tv_sec = ns / 1000000000;
    spec.it_value.tv_nsec = ns % 1000000000;
  }
  (void)::timerfd_settime(timer_.get(), 0, &spec, nullptr);
}

void Connector::serve() {
  std::lock_guard<std::mutex> lock(mu_);
  if (down_) return;
  // Every handshake below is tried whatever woke us (they are few and
  // non-blocking), so the events themselves are not needed; the kernel
  // drops from the ready list whatever is no longer ready when wait_fd() is
  // polled. (Level-triggered: reading them here in a loop until fewer came
  // back never ended once 64 sockets stayed writable.)
  uint64_t expirations;
  (void)!::read(timer_.get(), &expirations, sizeof expirations);
  accept_all();
  const auto now = Clock::now();
  std::deque<Incoming> keep;
  for (auto& in : incoming_) {
    if (!step_incoming(in)) continue;
    if (now - in.since >= plan_.timeout) {
      reject(in, "sent no valid hello within " + std::to_string(plan_.timeout.count()) + " ms");
      unwatch(in.fd.get());
      continue;
    }
    keep.push_back(std::move(in));
  }
  incoming_ = std::move(keep);
  for (auto it = outgoing_.begin(); it != outgoing_.end();) {
    if (step_outgoing(it->first, it->second)) it = outgoing_.erase(it);
    else ++it;
  }
  // Every pair is connected: nothing can come any more.
  if (connected() == size() - 1)
    close_listener_locked("sent no valid hello before this rank's connections were complete");
  arm_timer();
  update_active();
}

void Connector::end_setup() {
  std::lock_guard<std::mutex> lock(mu_);
  after_setup_ = true;
}

void Connector::close_listener_locked(const std::string& why) {
  if (listener_.valid()) {
    unwatch(listener_.get());
    listener_.reset();
  }
  for (const auto& in : incoming_) {
    reject(in, why);
    unwatch(in.fd.get());
  }
  incoming_.clear();
  update_active();
}

void Connector::stop_listening(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  close_listener_locked(why);
}

void Connector::shut_down() {
  std::lock_guard<std::mutex> lock(mu_);
  down_ = true;
  if (listener_.valid()) {
    unwatch(listener_.get());
    listener_.reset();
  }
  for (const auto& in : incoming_) unwatch(in.fd.get());
  incoming_.clear();
  for (auto& [j, o] : outgoing_) unwatch(o.fd.get());
  outgoing_.clear();
  // Peers waiting on this rank learn at once instead of by timeout. The
  // descriptors stay open: other threads of this rank may still hold them.
  for (auto& fd : owned_)
    if (fd.valid()) ::shutdown(fd.get(), SHUT_RDWR);
  update_active();
}

std::string Connector::waiting_for(int j) {
  std::lock_guard<std::mutex> lock(mu_);
  if (socket_of(j) >= 0) return who(j) + " is connected";
  if (j < plan_.index)
    return "no connection yet from " + who(j) + (listener_.valid() ? "" : " (no longer listening)");
  auto it = outgoing_.find(j);
  return "could not complete the connection to " + who(j) + " (" +
         (it == outgoing_.end() ? std::string("not started") : it->second.last_error) + ")";
}

void log_warning(int world_rank, const std::string& message) {
  TANDEM_LOG_ALWAYS(kWarn, tcp, "world rank " + std::to_string(world_rank) + ": " + message);
}

}  // namespace tcp
}  // namespace tandem
