#include "bootstrap/tcp_store_server.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <list>
#include <map>
#include <unordered_map>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <vector>

#include "bootstrap/store_protocol.h"
#include "common/errors.h"
#include "common/log.h"

namespace tandem {

namespace {

std::string peer_name(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
    if (ss.ss_family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
      port = ntohs(a->sin_port);
    } else if (ss.ss_family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
      port = ntohs(a->sin6_port);
    }
  }
  return std::string(host) + ":" + std::to_string(port);
}

// Compares without an early exit so that timing does not reveal how much of
// a guessed token was right.
bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

struct Conn {
  Fd fd;
  std::string peer;
  Bytes in;
  Bytes out;
  bool authed = false;
  bool bye = false;
  bool left = false;  // counted out of the members (leave())
  bool dead = false;
  int rank = -1;
  uint32_t session = 0;  // this rank's join count when it said HELLO
  Deadline hello_deadline;
  bool waiting = false;
  std::string wait_key;
  Deadline wait_deadline;
  // A pending GATHER (waiting is set too): wait_key is the prefix.
  bool gathering = false;
  uint32_t gather_count = 0;
};

// "s0/ag/3/" for "s0/ag/3/17": what GATHER waits on.
std::string prefix_of(const std::string& key) {
  const size_t slash = key.rfind('/');
  return slash == std::string::npos ? std::string() : key.substr(0, slash + 1);
}

}  // namespace

struct TcpStoreServer::Impl {
  explicit Impl(TcpStoreServer* server) : srv(server) {}
  TcpStoreServer* srv;
  std::list<Conn> conns;
  std::map<std::string, Bytes> kv;
  // GATHER's bookkeeping: keys set under each prefix, and the connections
  // waiting on one, so that a SET costs a counter and not a look at every
  // connection (an allgather of N ranks: N SETs, N waiting GATHERs).
  std::unordered_map<std::string, size_t> present;
  std::unordered_map<std::string, std::list<Conn*>> gathering;
  int job_size = -1;
  int lost_rank = -1;             // first rank that dropped its connection without BYE
  std::map<int, uint32_t> joins;  // HELLOs accepted per rank

  // Keys "s<n>/..." of sessions every rank has left (all have joined a later one).
  void drop_finished_sessions() {
    if (job_size <= 0 || static_cast<int>(joins.size()) < job_size) return;
    uint32_t oldest = UINT32_MAX;
    for (const auto& [rank, n] : joins) oldest = std::min(oldest, n - 1);  // current session
    for (auto it = kv.begin(); it != kv.end();) {
      const std::string& k = it->first;
      const size_t slash = k.find('/');
      uint32_t session = 0;
      bool numbered = k.size() > 1 && k[0] == 's' && slash != std::string::npos && slash > 1;
      for (size_t i = 1; numbered && i < slash; ++i) {
        if (k[i] < '0' || k[i] > '9' || session > UINT32_MAX / 10 - 1) numbered = false;
        else session = session * 10 + static_cast<uint32_t>(k[i] - '0');
      }
      it = numbered && session < oldest ? erase_key(it) : std::next(it);
    }
  }

  std::map<std::string, Bytes>::iterator erase_key(std::map<std::string, Bytes>::iterator it) {
    auto p = present.find(prefix_of(it->first));
    if (p != present.end() && --p->second == 0) present.erase(p);
    return kv.erase(it);
  }

  // Answers c's GATHER if every key is there; false while one is missing.
  bool try_gather(Conn& c) {
    auto p = present.find(c.wait_key);
    if (p == present.end() || p->second < c.gather_count) return false;
    store::Writer w(static_cast<uint8_t>(store::Reply::kValues));
    w.u32(c.gather_count);
    for (uint32_t i = 0; i < c.gather_count; ++i) {
      auto it = kv.find(c.wait_key + std::to_string(i));
      if (it == kv.end()) return false;  // other keys under the prefix: not yet
      w.bytes(it->second.data(), it->second.size());
    }
    c.waiting = c.gathering = false;
    queue(c, w);
    return true;
  }

  void stop_gathering(Conn& c) {
    if (!c.gathering) return;
    c.gathering = false;
    auto g = gathering.find(c.wait_key);
    if (g == gathering.end()) return;
    g->second.remove(&c);
    if (g->second.empty()) gathering.erase(g);
  }

  void gather(Conn& c, const std::string& prefix, uint32_t count, uint64_t timeout_ms) {
    c.waiting = c.gathering = true;
    c.wait_key = prefix;
    c.gather_count = count;
    if (try_gather(c)) return;
    c.gathering = false;
    if (lost_rank >= 0) {
      c.waiting = false;
      return queue_lost(c);
    }
    if (timeout_ms == 0) {
      c.waiting = false;
      return queue_simple(c, store::Reply::kMissing);
    }
    c.gathering = true;
    c.wait_deadline =
        Clock::now() + std::chrono::milliseconds(std::min<uint64_t>(timeout_ms, 1ull << 40));
    gathering[prefix].push_back(&c);
  }

  void queue(Conn& c, store::Writer& w) {
    const Bytes& f = w.frame();
    c.out.insert(c.out.end(), f.begin(), f.end());
  }
  void queue_simple(Conn& c, store::Reply r) {
    store::Writer w(static_cast<uint8_t>(r));
    queue(c, w);
  }
  void queue_value(Conn& c, const Bytes& v) {
    store::Writer w(static_cast<uint8_t>(store::Reply::kValue));
    w.bytes(v.data(), v.size());
    queue(c, w);
  }
  void queue_lost(Conn& c) {
    store::Writer w(static_cast<uint8_t>(store::Reply::kLost));
    w.u32(static_cast<uint32_t>(lost_rank));
    queue(c, w);
  }

  void reject(Conn& c, const std::string& why) {
    TANDEM_LOG_ALWAYS(kWarn, bootstrap,
                      "rendezvous store: refused connection from " + c.peer + ": " + why);
    store::Writer w(static_cast<uint8_t>(store::Reply::kRejected));
    w.str(why);
    const Bytes& f = w.frame();
    // Best effort and non-blocking: the connection is dropped right after.
    (void)!::send(c.fd.get(), f.data(), f.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    c.dead = true;
  }

  void hello(Conn& c, store::Reader& r) {
    std::string token = r.str();
    uint32_t rank = r.u32(), size = r.u32();
    if (!r.done())
      return reject(c,
                    "malformed HELLO: not what this version of Tandem sends (are the launcher "
                    "and every rank on the same Tandem?)");
    if (!same_token(token, srv->token_)) return reject(c, "wrong job token");
    if (size == 0 || rank >= size || size > (1u << 24))
      return reject(c, "rank " + std::to_string(rank) + " of size " + std::to_string(size) +
                           " is out of range");
    if (job_size >= 0 && static_cast<int>(size) != job_size)
      return reject(c, "size " + std::to_string(size) + " differs from the job's size " +
                           std::to_string(job_size) + " (set TANDEM_SIZE the same on every rank)");
    // A connection that said BYE has left, even while its close is still
    // on the way: the same process joining again (tandem_init after
    // tandem_finalize) is not a second process claiming the rank.
    for (auto& o : conns)
      if (o.authed && !o.dead && !o.bye && o.rank == static_cast<int>(rank))
        return reject(c, "rank " + std::to_string(rank) + " has already joined from " + o.peer +
                             " (is TANDEM_RANK unique per process?)");
    job_size = static_cast<int>(size);
    c.authed = true;
    c.rank = static_cast<int>(rank);
    c.session = joins[c.rank]++;
    {
      std::lock_guard<std::mutex> lock(srv->mu_);
      ++srv->members_;
      ++srv->session_members_[c.session];
    }
    drop_finished_sessions();
    store::Writer w(static_cast<uint8_t>(store::Reply::kOk));
    w.u32(c.session);
    queue(c, w);
  }

  // The member left (BYE) or its connection closed: it no longer counts.
  void leave(Conn& c) {
    if (!c.authed || c.left) return;
    c.left = true;
    std::lock_guard<std::mutex> lock(srv->mu_);
    --srv->members_;
    if (--srv->session_members_[c.session] == 0) srv->session_members_.erase(c.session);
    srv->cv_.notify_all();
  }

  void get(Conn& c, const std::string& key, uint64_t timeout_ms) {
    auto it = kv.find(key);
    if (it != kv.end()) return queue_value(c, it->second);
    if (lost_rank >= 0) return queue_lost(c);
    if (timeout_ms == 0) return queue_simple(c, store::Reply::kMissing);
    c.waiting = true;
    c.wait_key = key;
    c.wait_deadline =
        Clock::now() + std::chrono::milliseconds(std::min<uint64_t>(timeout_ms, 1ull << 40));
  }

  void set(const std::string& key, Bytes value) {
    for (auto& o : conns)
      if (o.waiting && !o.gathering && o.wait_key == key) {
        o.waiting = false;
        queue_value(o, value);
      }
    const std::string prefix = prefix_of(key);
    auto [it, fresh] = kv.insert_or_assign(key, std::move(value));
    (void)it;
    if (!fresh) return;
    ++present[prefix];
    auto g = gathering.find(prefix);
    if (g == gathering.end()) return;
    for (auto w = g->second.begin(); w != g->second.end();) {
      if (try_gather(**w)) w = g->second.erase(w);
      else ++w;
    }
    if (g->second.empty()) gathering.erase(g);
  }

  // One complete frame from c.
  void handle(Conn& c, const uint8_t* p, size_t n) {
    srv->requests_.fetch_add(1, std::memory_order_relaxed);
    store::Reader r(p, n);
    auto op = static_cast<store::Op>(r.u8());
    if (!c.authed) {
      if (op != store::Op::kHello) return reject(c, "first message is not HELLO");
      return hello(c, r);
    }
    if (c.waiting) return reject(c, "request sent while a GET is pending");
    switch (op) {
      case store::Op::kSet: {
        std::string key = r.str();
        Bytes value = r.bytes();
        if (!r.done()) return reject(c, "malformed SET");
        set(key, std::move(value));
        return queue_simple(c, store::Reply::kOk);
      }
      case store::Op::kGet: {
        std::string key = r.str();
        uint64_t timeout = r.u64();
        if (!r.done()) return reject(c, "malformed GET");
        return get(c, key, timeout);
      }
      case store::Op::kDel: {
        std::string key = r.str();
        if (!r.done()) return reject(c, "malformed DEL");
        auto it = kv.find(key);
        if (it != kv.end()) erase_key(it);
        return;
      }
      case store::Op::kGather: {
        std::string prefix = r.str();
        uint32_t count = r.u32();
        uint64_t timeout = r.u64();
        if (!r.done() || count == 0 || count > (1u << 24)) return reject(c, "malformed GATHER");
        return gather(c, prefix, count, timeout);
      }
      case store::Op::kBye:
        c.bye = true;
        leave(c);
        return;
      default: return reject(c, "unknown request " + std::to_string(static_cast<int>(op)));
    }
  }

  void read_from(Conn& c) {
    uint8_t buf[65536];
    bool closed = false;
    const uint32_t limit = c.authed ? store::kMaxFrame : store::kMaxHelloFrame;
    for (;;) {
      // Holding more than one frame's worth means a whole frame is there:
      // it is handled first, and the rest waits in the socket (poll says so
      // again), so a peer that never stops sending grows no buffer.
      if (c.in.size() > size_t{limit} + 4) break;
      ssize_t k = ::recv(c.fd.get(), buf, sizeof(buf), 0);
      if (k > 0) {
        srv->bytes_in_.fetch_add(static_cast<uint64_t>(k), std::memory_order_relaxed);
        c.in.insert(c.in.end(), buf, buf + k);
        continue;
      }
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      closed = true;  // closed or reset; what came before (a BYE) still counts
      break;
    }
    if (!c.dead && !store::take_frames(
                       c.in,
                       [&](const uint8_t* p, uint32_t n) {
                         handle(c, p, n);
                         return !c.dead;
                       },
                       limit))
      reject(c, store::bad_frame_length(c.in, limit) +
                    (c.authed ? "" : " before HELLO: not a Tandem rank of this version"));
    if (closed) c.dead = true;
  }

  void write_to(Conn& c) {
    while (!c.out.empty()) {
      ssize_t k = ::send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (k > 0) {
        srv->bytes_out_.fetch_add(static_cast<uint64_t>(k), std::memory_order_relaxed);
        c.out.erase(c.out.begin(), c.out.begin() + k);
        continue;
      }
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      c.dead = true;
      return;
    }
  }

  // Answers expired waits, drops unauthenticated stragglers and closed
  // connections; a member that left without BYE is a lost rank.
  void expire_and_reap() {
    auto now = Clock::now();
    for (auto& c : conns) {
      if (!c.authed && now >= c.hello_deadline && !c.dead)
        reject(c, "no complete HELLO within " + std::to_string(srv->hello_timeout_.count()) +
                      " ms of connecting");
      if (c.waiting && now >= c.wait_deadline) {
        stop_gathering(c);
        c.waiting = false;
        queue_simple(c, store::Reply::kMissing);
        write_to(c);
      }
    }
    for (auto it = conns.begin(); it != conns.end();) {
      if (!it->dead) {
        ++it;
        continue;
      }
      if (it->authed) {
        if (!it->bye && lost_rank < 0) {
          lost_rank = it->rank;
          for (auto& o : conns)
            if (o.waiting && !o.dead) {
              stop_gathering(o);
              o.waiting = false;
              queue_lost(o);
              write_to(o);
            }
        }
        leave(*it);
      }
      stop_gathering(*it);
      it = conns.erase(it);
    }
  }
};

TcpStoreServer::TcpStoreServer(std::string token, uint16_t port,
                               std::chrono::milliseconds hello_timeout)
    : token_(std::move(token)), hello_timeout_(hello_timeout), impl_(std::make_unique<Impl>(this)) {
  listen_fd_ = listen_any(port, &port_);
  wake_fd_ = Fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_fd_) throw SystemError("eventfd for the rendezvous store", errno);
  thread_ = std::thread([this] { run(); });
}

TcpStoreServer::~TcpStoreServer() {
  uint64_t one = 1;
  (void)!::write(wake_fd_.get(), &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
}

TcpStoreServer::Traffic TcpStoreServer::traffic() const {
  Traffic t;
  t.requests = requests_.load(std::memory_order_relaxed);
  t.bytes_in = bytes_in_.load(std::memory_order_relaxed);
  t.bytes_out = bytes_out_.load(std::memory_order_relaxed);
  clockid_t clock;
  timespec ts{};
  if (pthread_getcpuclockid(const_cast<std::thread&>(thread_).native_handle(), &clock) == 0 &&
      clock_gettime(clock, &ts) == 0)
    t.cpu_ns = static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
  return t;
}

bool TcpStoreServer::wait_until_idle(Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_until(lock, deadline, [&] { return members_ == 0; });
}

bool TcpStoreServer::wait_until_session_left(uint32_t session, Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_until(lock, deadline, [&] { return session_members_.count(session) == 0; });
}

void TcpStoreServer::run() {
  pthread_setname_np(pthread_self(), "tandem-store");
  Impl& s = *impl_;
  std::vector<pollfd> pfds;
  for (;;) {
    // Poll until the nearest wait or hello deadline.
    Deadline next = Clock::now() + std::chrono::hours(1);
    pfds.assign({{wake_fd_.get(), POLLIN, 0}, {listen_fd_.get(), POLLIN, 0}});
    for (auto& c : s.conns) {
      short ev = POLLIN;
      if (!c.out.empty()) ev |= POLLOUT;
      pfds.push_back({c.fd.get(), ev, 0});
      if (!c.authed) next = std::min(next, c.hello_deadline);
      if (c.waiting) next = std::min(next, c.wait_deadline);
    }
    int n = ::poll(pfds.data(), pfds.size(), ms_left(next));
    if (n < 0 && errno != EINTR) {
      TANDEM_ERROR(bootstrap, "rendezvous store: poll: %s; the store stops serving",
                   std::strerror(errno));
      return;
    }
    if (pfds[0].revents) return;  // shutdown
    if (pfds[1].revents & POLLIN) {
      for (;;) {
        int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;
        set_nodelay(fd);
        Conn c;
        c.fd = Fd(fd);
        c.peer = peer_name(fd);
        c.hello_deadline = Clock::now() + hello_timeout_;
        s.conns.push_back(std::move(c));
      }
    }
    size_t i = 2;
    for (auto& c : s.conns) {
      // Connections accepted in this round have no pollfd yet.
      if (i >= pfds.size() || pfds[i].fd != c.fd.get()) break;
      short rev = pfds[i++].revents;
      if (rev & (POLLIN | POLLHUP | POLLERR)) s.read_from(c);
      if (!c.dead && !c.out.empty()) s.write_to(c);
    }
    s.expire_and_reap();
  }
}

}  // namespace tandem
