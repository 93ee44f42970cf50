#include "transport/tcp/mesh.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>

#include "common/errors.h"

namespace tandem {
namespace tcp {
namespace {

using Clock = std::chrono::steady_clock;

// Foreign connections held at once while waiting for their hello; beyond
// this the oldest is dropped, so a flood cannot exhaust file descriptors.
constexpr size_t kMaxPending = 64;

struct Outgoing {
  enum State { kWaitRetry, kConnecting, kSending, kAwaitAck, kDone };
  int index = 0;
  Fd fd;
  State state = kWaitRetry;
  size_t sent = 0;
  uint8_t ack[Ack::kSize] = {};
  size_t got = 0;
  Clock::time_point retry_at{};
  std::chrono::milliseconds backoff{10};
  std::string last_error = "not tried yet";
};

struct Incoming {
  Fd fd;
  SockAddr from;
  uint8_t hello[Hello::kSize] = {};
  size_t got = 0;
};

class Mesh {
 public:
  Mesh(Fd listener, const MeshPlan& plan)
      : plan_(plan), listener_(std::move(listener)), fds_(plan.members.size()) {
    hello_.world_rank = plan.world_rank;
    hello_.secret = plan.secret;
    hello_bytes_ = encode_hello(hello_);
    for (int j = plan.index + 1; j < static_cast<int>(plan.members.size()); ++j) {
      Outgoing o;
      o.index = j;
      outgoing_.push_back(std::move(o));
    }
    awaiting_accept_ = plan.index;
  }

  std::vector<Fd> run();

 private:
  std::string who(int j) const {
    return "rank " + std::to_string(j) + " (world rank " + std::to_string(plan_.members[j]) +
           ") at " + to_string(plan_.addrs[j]);
  }
  bool done() const {
    if (awaiting_accept_ > 0) return false;
    for (const auto& o : outgoing_) if (o.state != Outgoing::kDone) return false;
    return true;
  }
  void start_connect(Outgoing& o);
  void step_outgoing(Outgoing& o, short revents);
  void accept_all();
  bool step_incoming(Incoming& in);  // false: drop it
  void reject(const Incoming& in, const std::string& why) {
    log_warning(plan_.world_rank, "rejected a connection from " + to_string(in.from) + ": " + why);
  }
  [[noreturn]] void fail_timeout() const;

  const MeshPlan& plan_;
  Fd listener_;
  std::vector<Fd> fds_;
  Hello hello_;
  std::array<uint8_t, Hello::kSize> hello_bytes_{};
  std::vector<Outgoing> outgoing_;
  std::deque<Incoming> pending_;
  int awaiting_accept_ = 0;
};

void Mesh::start_connect(Outgoing& o) {
  o.fd = tcp::start_connect(plan_.addrs[o.index]);
  configure_data_socket(o.fd.get());
  o.state = Outgoing::kConnecting;
}

void Mesh::step_outgoing(Outgoing& o, short revents) {
  if (o.state == Outgoing::kConnecting) {
    const int err = pending_error(o.fd.get());
    if (err == EINPROGRESS || (err == 0 && !(revents & (POLLOUT | POLLERR | POLLHUP)))) return;
    if (err != 0) {
      // The peer may not be listening yet or the SYN was lost: try again.
      o.last_error = std::strerror(err);
      o.fd.reset();
      o.state = Outgoing::kWaitRetry;
      o.retry_at = Clock::now() + o.backoff;
      o.backoff = std::min(o.backoff * 2, std::chrono::milliseconds(500));
      return;
    }
    o.state = Outgoing::kSending;
  }
  if (o.state == Outgoing::kSending) {
    const ssize_t n = ::send(o.fd.get(), hello_bytes_.data() + o.sent, hello_bytes_.size() - o.sent,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n < 0)
      throw PeerLostError("tcp setup: " + who(o.index) + " dropped the connection: " +
                          std::strerror(errno));
    o.sent += static_cast<size_t>(n);
    if (o.sent == hello_bytes_.size()) o.state = Outgoing::kAwaitAck;
    return;
  }
  if (o.state == Outgoing::kAwaitAck) {
    const ssize_t n = ::recv(o.fd.get(), o.ack + o.got, Ack::kSize - o.got, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0)
      throw PeerLostError("tcp setup: " + who(o.index) +
                          " closed the connection instead of accepting it (" +
                          (n == 0 ? std::string("end of stream") : std::strerror(errno)) +
                          "): it died, or it belongs to another job; see its log");
    o.got += static_cast<size_t>(n);
    if (o.got < Ack::kSize) return;
    const std::string bad = check_ack(o.ack, o.got, plan_.members[o.index]);
    if (!bad.empty()) throw BootstrapError("tcp setup: " + who(o.index) + ": " + bad);
    fds_[o.index] = std::move(o.fd);
    o.state = Outgoing::kDone;
  }
}

void Mesh::accept_all() {
  for (;;) {
    Incoming in;
    in.fd = accept_from(listener_.get(), in.from);
    if (!in.fd.valid()) return;
    configure_data_socket(in.fd.get());
    if (pending_.size() >= kMaxPending) {
      reject(pending_.front(), "too many unidentified connections at once; dropping the oldest");
      pending_.pop_front();
    }
    pending_.push_back(std::move(in));
  }
}

bool Mesh::step_incoming(Incoming& in) {
  const ssize_t n = ::recv(in.fd.get(), in.hello + in.got, Hello::kSize - in.got, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
  if (n <= 0) {
    reject(in, n == 0 ? "closed before sending a complete hello"
                      : std::string("connection error: ") + std::strerror(errno));
    return false;
  }
  in.got += static_cast<size_t>(n);
  Hello h;
  const std::string bad = check_hello(in.hello, in.got, &h);
  if (!bad.empty()) {
    reject(in, bad);
    return false;
  }
  if (in.got < Hello::kSize) return true;
  if (!same_secret(h.secret.data(), plan_.secret.data())) {
    reject(in, "wrong secret: not a member of this job");
    return false;
  }
  const auto& m = plan_.members;
  const auto it = std::find(m.begin(), m.begin() + plan_.index, h.world_rank);
  if (it == m.begin() + plan_.index) {
    reject(in, "claims world rank " + std::to_string(h.world_rank) +
                   ", which is not a member of this group that connects to this rank");
    return false;
  }
  const auto j = static_cast<size_t>(it - m.begin());
  if (fds_[j].valid()) {
    reject(in, "claims world rank " + std::to_string(h.world_rank) + ", already connected");
    return false;
  }
  const auto ack = encode_ack(plan_.world_rank);
  // A fresh socket's send buffer is empty: 12 bytes always fit at once.
  if (::send(in.fd.get(), ack.data(), ack.size(), MSG_NOSIGNAL | MSG_DONTWAIT) !=
      static_cast<ssize_t>(ack.size()))
    throw PeerLostError("tcp setup: " + who(static_cast<int>(j)) +
                        " dropped the connection during the handshake");
  fds_[j] = std::move(in.fd);
  --awaiting_accept_;
  return false;
}

void Mesh::fail_timeout() const {
  std::string missing;
  for (int j = 0; j < plan_.index; ++j)
    if (!fds_[j].valid()) missing += "\n  no connection yet from " + who(j);
  for (const auto& o : outgoing_)
    if (o.state != Outgoing::kDone)
      missing += "\n  could not complete the connection to " + who(o.index) + " (" +
                 o.last_error + ")";
  throw TimeoutError("tcp setup (world rank " + std::to_string(plan_.world_rank) + "): after " +
                     std::to_string(plan_.timeout.count()) + " ms" + missing +
                     "\nAre those ranks running, and is the address reachable from here? "
                     "Set TANDEM_TCP_IFNAME to an interface that reaches them.");
}

std::vector<Fd> Mesh::run() {
  const auto deadline = Clock::now() + plan_.timeout;
  for (auto& o : outgoing_) start_connect(o);
  std::vector<pollfd> pfds;
  std::vector<Outgoing*> out_of;  // pfds index -> outgoing, or nullptr
  while (!done()) {
    auto now = Clock::now();
    if (now >= deadline) fail_timeout();
    auto wake = deadline;
    pfds.clear();
    out_of.clear();
    if (awaiting_accept_ > 0) {
      pfds.push_back({listener_.get(), POLLIN, 0});
      out_of.push_back(nullptr);
    }
    for (auto& o : outgoing_) {
      if (o.state == Outgoing::kWaitRetry && o.retry_at <= now) start_connect(o);
      if (o.state == Outgoing::kWaitRetry) wake = std::min(wake, o.retry_at);
      if (o.state == Outgoing::kDone || o.state == Outgoing::kWaitRetry) continue;
      const short ev = o.state == Outgoing::kAwaitAck ? POLLIN : POLLOUT;
      pfds.push_back({o.fd.get(), ev, 0});
      out_of.push_back(&o);
    }
    const size_t first_pending = pfds.size();
    for (auto& in : pending_) pfds.push_back({in.fd.get(), POLLIN, 0});
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(wake - now).count();
    const int rc = ::poll(pfds.data(), pfds.size(), static_cast<int>(std::max<int64_t>(ms, 0)));
    if (rc < 0 && errno != EINTR) throw SystemError("tcp setup: poll", errno);
    if (rc <= 0) continue;
    for (size_t i = 0; i < first_pending; ++i) {
      if (pfds[i].revents == 0) continue;
      if (out_of[i] == nullptr) accept_all();
      else step_outgoing(*out_of[i], pfds[i].revents);
    }
    // Pending sockets accepted in this round are not in pfds; they are
    // polled next round. Walk the old ones by position, dropping finished.
    std::deque<Incoming> keep;
    for (size_t i = 0; i < pending_.size(); ++i) {
      const size_t p = first_pending + i;
      const bool polled = p < pfds.size() && pfds[p].fd == pending_[i].fd.get();
      if (!polled || pfds[p].revents == 0 || step_incoming(pending_[i]))
        keep.push_back(std::move(pending_[i]));
    }
    pending_ = std::move(keep);
  }
  for (const auto& in : pending_)
    reject(in, "sent no valid hello before this rank's connections were complete");
  return std::move(fds_);
}

}  // namespace

void log_warning(int world_rank, const std::string& message) {
  const std::string line =
      "tandem[world rank " + std::to_string(world_rank) + "] tcp: WARNING: " + message + "\n";
  // One write so lines from several threads or ranks do not interleave.
  (void)!::fwrite(line.data(), 1, line.size(), stderr);
}

std::vector<Fd> connect_mesh(Fd listener, const MeshPlan& plan) {
  Mesh mesh(std::move(listener), plan);
  return mesh.run();
}

}  // namespace tcp
}  // namespace tandem
