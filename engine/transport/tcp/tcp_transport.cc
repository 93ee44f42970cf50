#include "transport/tcp/tcp_transport_impl.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "common/errors.h"
#include "common/log.h"
#include "common/settings.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/wire.h"

namespace tandem {
namespace tcp {

using Clock = std::chrono::steady_clock;
// A spin also stops when two tries lie further apart than this: a try is
// one or two non-blocking system calls, far shorter than the gap, so a
// longer one means the thread lost its CPU.
constexpr auto kSpinGap = std::chrono::microseconds(20);

struct TcpTransport::Transfer {
  bool is_send = false;
  int peer = 0;
  int fd = -1;
  uint8_t header[kHeaderBytes] = {};  // send: our length; recv: theirs
  uint8_t padding[kWireLine] = {};    // send: zeros; recv: where theirs land
  uint8_t* data = nullptr;
  size_t bytes = 0;
  size_t done = 0;          // header, payload and padding bytes moved so far
  size_t limit = SIZE_MAX;  // progress() stops here for now (paced sendrecv)
  bool header_checked = false;
  Clock::time_point last_progress{};
  size_t total() const { return kHeaderBytes + bytes + wire_padding(bytes); }
  size_t payload_done() const {
    return done <= kHeaderBytes ? 0 : std::min(bytes, done - kHeaderBytes);
  }
  bool complete() const { return done == total(); }
  bool paused() const { return !complete() && done >= limit; }
};

namespace {

// Whether a spin can have a CPU without taking it from anyone: no more
// threads runnable on the host than it has CPUs (/proc/loadavg's fourth
// field, this thread included), read at most once a millisecond per
// thread. Several ranks on a node with fewer cores, or other work, and the
// spin would only delay the peer it waits for.
bool spare_cpu(Clock::time_point now) {
  struct Probe {
    int fd = ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    long cpus = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
    Clock::time_point read_at{};
    bool spare = true;
    ~Probe() {
      if (fd >= 0) ::close(fd);
    }
  };
  thread_local Probe probe;
  if (probe.fd < 0) return true;
  if (now - probe.read_at < std::chrono::milliseconds(1)) return probe.spare;
  probe.read_at = now;
  char text[128];
  const ssize_t n = ::pread(probe.fd, text, sizeof text - 1, 0);
  if (n <= 0) return probe.spare;
  text[n] = '\0';
  double a, b, c;
  long running = 0;
  if (std::sscanf(text, "%lf %lf %lf %ld/", &a, &b, &c, &running) == 4)
    probe.spare = running <= probe.cpus;
  return probe.spare;
}

}  // namespace

TcpTransport::TcpTransport(int rank, std::vector<int> members, std::unique_ptr<Connector> links,
                           std::chrono::milliseconds timeout, std::chrono::microseconds spin,
                           size_t piece)
    : rank_(rank),
      members_(std::move(members)),
      timeout_(timeout),
      spin_(spin),
      piece_(piece),
      links_(std::move(links)) {
  stats_.on = tcp_stats_from_environment();
  for (size_t j = 0; j < members_.size(); ++j) peers_.push_back(std::make_unique<PeerLink>());
  wake_ = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_.valid()) throw SystemError("tcp: eventfd", errno);
}

TcpTransport::~TcpTransport() {
  if (!stats_.on) return;
  auto v = [](const std::atomic<uint64_t>& a) { return static_cast<unsigned long long>(a.load()); };
  char line[1024];
  std::snprintf(
      line, sizeof line,
      "stats, world rank %d, group of %d, %d connected: %llu calls: %llu done without waiting, "
      "%llu caught while spinning, %llu slept (%llu sleeps, %.1f ms asleep); spins: %llu gave "
      "up just before the answer, %llu pauses after such spins in a row, %llu skipped paused, "
      "%llu skipped with no spare CPU",
      members_[rank_], size(), links_ ? links_->connected() : 0, v(stats_.calls), v(stats_.no_wait),
      v(stats_.caught_spinning), v(stats_.calls_that_slept), v(stats_.sleeps),
      stats_.slept_ns.load() / 1e6, v(stats_.near_misses), v(stats_.penalties), v(stats_.paused),
      v(stats_.no_spare_cpu));
  TANDEM_LOG_ALWAYS(kInfo, tcp, line);  // asked for with TANDEM_TCP_STATS
}

std::string TcpTransport::describe() const {
  std::string text = "tcp, group of " + std::to_string(size());
  if (links_) {
    const int n = links_->connected();
    text += " (this is " + links_->who(rank_) + "; " + std::to_string(n) +
            (n == 1 ? " peer" : " peers") + " connected at set-up, the others on first use)";
  }
  return text + ", spinning " + std::to_string(spin_.count()) + " us before sleeping";
}

std::string TcpTransport::who(int peer) const { return links_->who(peer); }

void TcpTransport::check_peer(int peer, const char* what) const {
  if (peer < 0 || peer >= size() || peer == rank_)
    throw InvalidArgument(std::string("tcp ") + what + ": peer " + std::to_string(peer) +
                          " is not another rank of this group of " + std::to_string(size()) +
                          " (this rank is " + std::to_string(rank_) + ")");
}

void TcpTransport::send(int peer, const void* data, size_t bytes) {
  check_peer(peer, "send");
  if (data == nullptr && bytes > 0) throw InvalidArgument("tcp send: null buffer with bytes > 0");
  std::lock_guard<std::mutex> lock(peers_[peer]->send_mu);
  Transfer t;
  t.is_send = true;
  t.peer = peer;
  t.data = static_cast<uint8_t*>(const_cast<void*>(data));
  t.bytes = bytes;
  run(&t, 1);
}

void TcpTransport::recv(int peer, void* data, size_t bytes) {
  check_peer(peer, "recv");
  if (data == nullptr && bytes > 0) throw InvalidArgument("tcp recv: null buffer with bytes > 0");
  std::lock_guard<std::mutex> lock(peers_[peer]->recv_mu);
  Transfer t;
  t.peer = peer;
  t.data = static_cast<uint8_t*>(data);
  t.bytes = bytes;
  run(&t, 1);
}

void TcpTransport::sendrecv(int to, const void* send_data, size_t send_bytes, int from,
                            void* recv_data, size_t recv_bytes) {
  check_peer(to, "sendrecv");
  check_peer(from, "sendrecv");
  if ((send_data == nullptr && send_bytes > 0) || (recv_data == nullptr && recv_bytes > 0))
    throw InvalidArgument("tcp sendrecv: null buffer with bytes > 0");
  // Always the send lock first: with one lock of each family per call, no
  // two calls can wait on each other.
  std::lock_guard<std::mutex> send_lock(peers_[to]->send_mu);
  std::lock_guard<std::mutex> recv_lock(peers_[from]->recv_mu);
  Transfer t[2];
  t[0].is_send = true;
  t[0].peer = to;
  t[0].data = static_cast<uint8_t*>(const_cast<void*>(send_data));
  t[0].bytes = send_bytes;
  t[1].peer = from;
  t[1].data = static_cast<uint8_t*>(recv_data);
  t[1].bytes = recv_bytes;
  run(t, 2);
}

bool TcpTransport::progress(Transfer& t) {
  while (!t.complete() && !t.paused()) {
    // The parts of [done, end) of the wire message: header, payload, padding.
    const size_t end = std::min(t.total(), t.limit);
    const size_t pad = wire_padding(t.bytes);
    struct Part {
      uint8_t* at;
      size_t from, to;  // offsets in the wire message
    };
    const Part parts[3] = {{t.header, 0, kHeaderBytes},
                           {t.data, kHeaderBytes, kHeaderBytes + t.bytes},
                           {t.padding, kHeaderBytes + t.bytes, kHeaderBytes + t.bytes + pad}};
    iovec iov[3];
    int n = 0;
    for (const Part& p : parts) {
      const size_t from = std::max(t.done, p.from), to = std::min(end, p.to);
      if (from < to) iov[n++] = {p.at + (from - p.from), to - from};
    }
    ssize_t r;
    if (t.is_send) {
      msghdr m{};
      m.msg_iov = iov;
      m.msg_iovlen = static_cast<size_t>(n);
      r = ::sendmsg(t.fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    } else {
      r = ::readv(t.fd, iov, n);
    }
    if (r > 0) {
      t.done += static_cast<size_t>(r);
      (t.is_send ? bytes_sent_ : bytes_received_)
          .fetch_add(static_cast<uint64_t>(r), std::memory_order_relaxed);
      t.last_progress = Clock::now();
      if (!t.is_send && !t.header_checked && t.done >= kHeaderBytes) {
        t.header_checked = true;
        const uint64_t theirs = decode_length(t.header);
        if (theirs != t.bytes)
          fail(Kind::kMismatch, "tcp recv: " + who(t.peer) + " sent a message of " +
                                    std::to_string(theirs) + " bytes where this rank expected " +
                                    std::to_string(t.bytes) +
                                    ": the ranks called different operations or sizes");
      }
      continue;
    }
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    if (r < 0 && errno == EINTR) continue;
    const std::string cause = r == 0 ? "it closed the connection" : std::strerror(errno);
    fail(Kind::kPeerLost, std::string("tcp ") + (t.is_send ? "send to " : "recv from ") +
                              who(t.peer) + " failed: " + cause +
                              " (the process died, or its transport failed or was aborted)");
  }
  return t.complete();
}

void TcpTransport::serve_links() {
  try {
    links_->serve();
  } catch (const Error&) { fail(std::current_exception()); }
}

// First use of a peer outside the set-up plan: want() starts the
// connection (or, when the peer opens the pair, notes it is awaited), and
// the loop serves every handshake of this rank until the peers are
// connected, the transport fails, or the timeout passes. It serves the
// listener too, so two ranks that each wait for a connection from the
// other's side always get one.
void TcpTransport::connect_peers(Transfer* ts, int count, Clock::time_point start) {
  auto missing = [&] {
    for (int i = 0; i < count; ++i)
      if (links_->socket_of(ts[i].peer) < 0) return i;
    return -1;
  };
  if (missing() < 0) return;
  for (int i = 0; i < count; ++i) links_->want(ts[i].peer);
  const auto deadline = start + timeout_;
  for (;;) {
    serve_links();
    const int i = missing();
    if (i < 0) return;
    const auto now = Clock::now();
    if (now >= deadline)
      fail(Kind::kTimeout, "tcp: no connection within " + std::to_string(timeout_.count()) +
                               " ms: " + links_->waiting_for(ts[i].peer) +
                               "; the peer may be stopped, hung or far behind: raise "
                               "TANDEM_TIMEOUT if it is only slow");
    pollfd pfds[2] = {{links_->wait_fd(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    const int rc = ::poll(pfds, 2, static_cast<int>(ms));
    if (rc < 0 && errno != EINTR) throw SystemError("tcp: poll", errno);
    if (rc > 0 && pfds[1].revents != 0) throw_stored();
  }
}

size_t TcpTransport::piece_of(const Transfer* ts) {
  if (piece_ != 0) return piece_;
  bool paces[2];
  for (int i = 0; i < 2; ++i) {
    std::atomic<int>& known = peers_[ts[i].peer]->paces;
    int p = known.load(std::memory_order_relaxed);
    if (p < 0) {
      p = paces_by_estimate(ts[i].fd) ? 1 : 0;
      known.store(p, std::memory_order_relaxed);
    }
    paces[i] = p == 1;
  }
  return sendrecv_piece(piece_, paces[0], paces[1]);
}

void TcpTransport::run(Transfer* ts, int count) {
  throw_if_failed();
  const auto start = Clock::now();
  connect_peers(ts, count, start);
  for (int i = 0; i < count; ++i) ts[i].fd = links_->socket_of(ts[i].peer);
  // A sendrecv moves both directions a piece at a time (each waits at a
  // piece boundary for the other), so that one rank never runs far ahead
  // while its peer waits to be scheduled. How big a piece pays depends on
  // who sends the bytes. A control that paces by its own estimate (BBR)
  // sends what the window does not take at once later, from its timer,
  // often on another CPU: between two namespace nodes of one host, whose
  // link hands each packet to the queue of the CPU sending it, a flow sent
  // from two CPUs arrives out of order, and BBR, reading the duplicates as
  // a slower path, can hold the connection at a fraction of its speed for
  // the rest of the job; 128 KiB pieces keep each piece inside the window,
  // so the call sends it all. A loss-based control (cubic, Linux's default)
  // sends a whole piece from the call, and there fewer, larger pieces save
  // the waits at piece boundaries, so 1 MiB pieces win. The measurements
  // under both controls: docs/tcp.md, "Piece by congestion control".
  const size_t piece = count == 2 ? piece_of(ts) : 0;
  for (int i = 0; i < count; ++i) {
    ts[i].last_progress = start;
    if (count == 2) ts[i].limit = kHeaderBytes + piece;
    if (ts[i].is_send) encode_length(ts[i].header, ts[i].bytes);
    progress(ts[i]);
  }
  pollfd pfds[4];
  int which[4];
  auto moved = start;  // when a byte last moved in either direction
  auto last_try = start;
  // Whether to spin before the next sleep: asked again after every wake-up,
  // so that a long transfer spins again once bytes flow.
  auto may_spin = [&](Clock::time_point now) {
    if (spin_.count() == 0) return false;
    if (now.time_since_epoch().count() < no_spin_until_.load(std::memory_order_relaxed)) {
      tally(stats_.paused);
      return false;
    }
    if (!spare_cpu(now)) {
      tally(stats_.no_spare_cpu);
      return false;
    }
    return true;
  };
  bool spinning = may_spin(start);
  bool spun = false, slept = false;
  bool judging = false;
  tally(stats_.calls);
  for (;;) {
    // Both directions paused at their piece boundary: the next piece.
    bool all_paused = true, any_paused = false;
    for (int i = 0; i < count; ++i) {
      if (ts[i].complete()) continue;
      all_paused = all_paused && ts[i].paused();
      any_paused = any_paused || ts[i].paused();
    }
    if (any_paused && all_paused) {
      for (int i = 0; i < count; ++i) {
        if (ts[i].complete()) continue;
        ts[i].limit += piece;
        ts[i].last_progress = Clock::now();
        progress(ts[i]);
      }
      continue;
    }
    int n = 0;
    auto deadline = Clock::time_point::max();
    for (int i = 0; i < count; ++i) {
      if (ts[i].complete() || ts[i].paused()) continue;
      const short ev = ts[i].is_send ? POLLOUT : POLLIN;
      pfds[n] = {ts[i].fd, static_cast<short>(ev | POLLRDHUP), 0};
      which[n++] = i;
      deadline = std::min(deadline, ts[i].last_progress + timeout_);
    }
    if (n == 0) {
      if (spinning && spun) spin_judge_.caught();
      if (!slept) tally(spun ? stats_.caught_spinning : stats_.no_wait);
      return;
    }
    const auto now = Clock::now();
    for (int k = 0; k < n; ++k) moved = std::max(moved, ts[which[k]].last_progress);
    if (spinning) {
      if (now - moved < spin_ && now - last_try < kSpinGap) {
        if (failed_.load(std::memory_order_relaxed)) throw_stored();
        last_try = now;
        spun = true;
        // With a spare CPU nothing else waits for this one but, at most,
        // the peer itself: the scheduler keeps ranks that wake each other
        // on one CPU, where a pure spin never saw the answer (counted on
        // a quiet host: 0 caught, every spin given up just before it).
        // A yield lets such a peer run and costs one system call otherwise.
        ::sched_yield();
        for (int k = 0; k < n; ++k) progress(ts[which[k]]);
        continue;
      }
      // The spin ran out (or this thread lost its CPU in the middle of it):
      // sleep, and judge the spin by how soon the sleep ends.
      spinning = false;
      judging = true;
    }
    if (now >= deadline) {
      for (int k = 0; k < n; ++k) {
        const Transfer& t = ts[which[k]];
        if (t.last_progress + timeout_ > now) continue;
        fail(Kind::kTimeout,
             std::string("tcp ") + (t.is_send ? "send to " : "recv from ") + who(t.peer) +
                 ": no progress for " + std::to_string(timeout_.count()) + " ms (" +
                 std::to_string(t.payload_done()) + " of " + std::to_string(t.bytes) +
                 " bytes moved); the peer may be stopped, hung or far behind: raise "
                 "TANDEM_TIMEOUT if it is only slow");
      }
    }
    pfds[n] = {wake_.get(), POLLIN, 0};
    // While peers may still connect to this rank, a wait answers them: the
    // peer may need its connection before it can send what this call waits
    // for.
    const bool serve = links_->active();
    if (serve) pfds[n + 1] = {links_->wait_fd(), POLLIN, 0};
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    const int rc = ::poll(pfds, static_cast<nfds_t>(n + 1 + (serve ? 1 : 0)), static_cast<int>(ms));
    const auto woke = Clock::now();
    if (stats_.on) {
      if (!slept) tally(stats_.calls_that_slept);
      tally(stats_.sleeps);
      stats_.slept_ns.fetch_add(static_cast<uint64_t>((woke - now).count()),
                                std::memory_order_relaxed);
    }
    slept = true;
    if (judging) {
      judging = false;
      judge_spin(now, woke);
    }
    spinning = may_spin(woke);
    last_try = woke;
    if (rc < 0 && errno != EINTR) throw SystemError("tcp: poll", errno);
    if (rc <= 0) continue;
    if (pfds[n].revents != 0) throw_stored();
    if (serve && pfds[n + 1].revents != 0) serve_links();
    for (int k = 0; k < n; ++k) {
      Transfer& t = ts[which[k]];
      const short re = pfds[k].revents;
      if (re == 0) continue;
      // A send whose peer has closed its end can never complete; without
      // this check it would only notice once the socket buffer filled up.
      if (t.is_send && (re & (POLLRDHUP | POLLHUP | POLLERR))) {
        const int err = pending_error(t.fd);
        fail(Kind::kPeerLost, "tcp send to " + who(t.peer) + " failed: " +
                                  (err != 0 ? std::strerror(err) : "it closed the connection") +
                                  " (the process died, or its transport failed or was aborted)");
      }
      progress(t);
    }
  }
}

// The sleep after a spin ended `woke`: whether the spin was in the way
// (spin_judge.h), and if so no call spins for the pause it gives.
void TcpTransport::judge_spin(Clock::time_point slept, Clock::time_point woke) {
  if (SpinJudge::near_miss(woke - slept)) tally(stats_.near_misses);
  const int64_t pause_ms = spin_judge_.gave_up(woke - slept);
  if (pause_ms == 0) return;
  tally(stats_.penalties);
  no_spin_until_.store((woke + std::chrono::milliseconds(pause_ms)).time_since_epoch().count(),
                       std::memory_order_relaxed);
}

void TcpTransport::fail(Kind kind, const std::string& message) {
  switch (kind) {
    case Kind::kPeerLost: fail(std::make_exception_ptr(PeerLostError(message)));
    case Kind::kTimeout: fail(std::make_exception_ptr(TimeoutError(message)));
    case Kind::kMismatch: fail(std::make_exception_ptr(MismatchError(message)));
    case Kind::kAborted: break;
  }
  fail(std::make_exception_ptr(AbortedError(message)));
}

void TcpTransport::fail(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    if (!failed_.load()) {
      failure_ = std::move(error);
      failed_.store(true);
      const uint64_t one = 1;
      (void)!::write(wake_.get(), &one, sizeof one);
      // Peers waiting on this rank learn at once instead of by timeout,
      // and a peer that would connect later is refused.
      if (links_) links_->shut_down();
    }
  }
  throw_stored();
}

void TcpTransport::throw_if_failed() {
  if (failed_.load()) throw_stored();
}

void TcpTransport::throw_stored() {
  std::exception_ptr e;
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    e = failure_;
  }
  std::rethrow_exception(e);
}

Transport::Traffic TcpTransport::traffic() const {
  Traffic t;
  t.bytes_sent = bytes_sent_.load(std::memory_order_relaxed);
  t.bytes_received = bytes_received_.load(std::memory_order_relaxed);
  t.connections = links_ ? links_->connected() : 0;
  return t;
}

void TcpTransport::abort(const std::string& why) {
  try {
    fail(Kind::kAborted, why);
  } catch (const Error&) {
    // abort() reports nothing: the stored error is for the waiting calls.
  }
}

}  // namespace tcp

bool tcp_stats_from_environment() { return env_bool(kStatsVariable); }

size_t sendrecv_piece(size_t setting, bool to_paces, bool from_paces) {
  if (setting != 0) return setting;
  return to_paces || from_paces ? kPacedPieceBytes : kUnpacedPieceBytes;
}

size_t tcp_piece_from_environment() {
  const int64_t v = env_int(kPieceVariable);
  if (v != 0 && v < 4096)
    throw InvalidArgument(std::string(kPieceVariable) + "=" + std::to_string(v) +
                          " is too small a piece; expected 0 (chosen by the congestion control) "
                          "or at least 4096 bytes");
  return static_cast<size_t>(v);
}

std::chrono::microseconds tcp_spin_from_environment() {
  return std::chrono::microseconds(env_int(kSpinVariable));
}

}  // namespace tandem
