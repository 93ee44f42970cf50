#include "elastic/service.h"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <list>
#include <map>
#include <poll.h>
#include <pthread.h>
#include <set>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include "bootstrap/identity.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/settings.h"
#include "elastic/protocol.h"
#include "elastic/selection.h"

namespace tandem {
namespace elastic {

namespace {

std::string address_text(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "";
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&ss)->sin_addr, host, sizeof(host));
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    std::string s = host;
    // A dual-stack socket reports IPv4 peers as ::ffff:a.b.c.d.
    if (s.rfind("::ffff:", 0) == 0 && s.find('.') != std::string::npos) return s.substr(7);
    return s;
  }
  return host;
}

std::string peer_of(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  return address_text(ss);
}

std::string local_of(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  return address_text(ss);
}

bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// "g<n>/..." -> n; kNoGeneration for any other key.
uint32_t generation_of_key(const std::string& key) {
  if (key.size() < 3 || key[0] != 'g') return kNoGeneration;
  uint64_t n = 0;
  size_t i = 1;
  for (; i < key.size() && key[i] >= '0' && key[i] <= '9' && n < kNoGeneration; ++i)
    n = n * 10 + static_cast<uint64_t>(key[i] - '0');
  if (i == 1 || i >= key.size() || key[i] != '/' || n >= kNoGeneration) return kNoGeneration;
  return static_cast<uint32_t>(n);
}

enum class State { kNew, kWaiting, kIn, kDone, kLost, kUnresponsive, kRemoved, kFailed };

struct Member {
  uint32_t id = 0;
  Fd fd;
  std::string peer;
  Bytes in, out;
  bool authed = false;
  bool closed = false;  // the connection is gone
  Deadline hello_deadline;
  std::string node, label;
  uint32_t pid = 0;
  uint64_t order = 0;  // the launcher's rank of the process (HELLO)
  State state = State::kNew;
  bool said_done = false;
  uint32_t generation = kNoGeneration;  // the one it is (or last was) in
  uint32_t rank = 0;                    // its rank there
  // JOIN
  uint32_t last = kNoGeneration;
  std::string probe_endpoint;
  uint64_t join_seq = 0;
  Clock::time_point joined_at;
  // probe round
  bool reported = false;
  std::vector<uint32_t> unreachable;
  // pings
  bool ping_out = false;
  uint32_t ping_nonce = 0;
  Deadline ping_deadline;
  Deadline next_ping;
  // a GET waiting for its key
  bool waiting_get = false;
  std::string wait_key;
  Deadline wait_deadline;

  bool in_state(std::initializer_list<State> s) const {
    return std::find(s.begin(), s.end(), state) != s.end();
  }
};

}  // namespace

struct MembershipService::Impl {
  Impl(MembershipService* s, ServiceSettings st) : svc(s), settings(std::move(st)) {
    base_job_id = random_job_id("el");
    if (!settings.report)
      settings.report = [](const std::string& line) { TANDEM_LOG_ALWAYS(kInfo, elastic, line); };
  }

  MembershipService* svc;
  ServiceSettings settings;
  std::string base_job_id;
  std::list<Member> members;
  uint32_t next_id = 1;
  uint64_t join_seq = 0;
  std::map<std::string, Bytes> kv;
  bool reached = false;

  uint32_t current = kNoGeneration;
  std::vector<uint32_t> current_members;  // ids by rank
  std::set<std::string> blacklist;
  int resets = 0;
  std::string failure;  // set once the job failed
  uint64_t last_update_ts = 0;
  bool announced = false;  // UPDATE sent for the newcomers now waiting
  bool finished_reported = false;

  Clock::time_point first_join{};  // of generation 0's joiners
  bool straggler_clock = false;    // a formation is due once stragglers are accounted for
  Deadline straggler_deadline;
  bool probing = false;
  uint32_t round = 0;
  std::vector<Candidate> candidates;
  Deadline probe_deadline;
  // Below the minimum: waiting for newcomers until min_deadline.
  bool below_min = false;
  Deadline min_deadline;
  size_t below_min_count = 0;

  // ---------------------------------------------------------------- helpers
  Member* find(uint32_t id) {
    for (auto& m : members)
      if (m.id == id) return &m;
    return nullptr;
  }

  void queue(Member& m, store::Writer& w) {
    if (m.closed) return;
    const Bytes& f = w.frame();
    m.out.insert(m.out.end(), f.begin(), f.end());
    write_to(m);
  }
  void queue_simple(Member& m, uint8_t code) {
    store::Writer w(code);
    queue(m, w);
  }

  void write_to(Member& m) {
    while (!m.out.empty() && !m.closed) {
      ssize_t k = ::send(m.fd.get(), m.out.data(), m.out.size(), MSG_NOSIGNAL);
      if (k > 0) {
        m.out.erase(m.out.begin(), m.out.begin() + k);
        continue;
      }
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      on_closed(m);
      return;
    }
  }

  void reject(Member& m, const std::string& why) {
    TANDEM_LOG_ALWAYS(kWarn, elastic,
                      "membership service: refused connection from " + m.peer + ": " + why);
    store::Writer w(static_cast<uint8_t>(store::Reply::kRejected));
    w.str(why);
    const Bytes& f = w.frame();
    (void)!::send(m.fd.get(), f.data(), f.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    m.closed = true;
    m.fd.reset();
  }

  void publish() {
    ServiceSummary s;
    s.generations = current == kNoGeneration ? 0 : current + 1;
    s.size = static_cast<int>(current_members.size());
    for (const auto& m : members) {
      if (!m.authed) continue;
      if (m.state == State::kDone) ++s.done;
      if (m.in_state({State::kLost, State::kUnresponsive})) ++s.lost;
      if (m.state == State::kRemoved) ++s.removed;
    }
    s.failure = failure;
    std::lock_guard<std::mutex> lock(svc->summary_mu_);
    svc->summary_ = s;
  }

  // A member of generation g has left it: every GET waiting on g's keys
  // would wait for nothing.
  void left_generation(uint32_t g, uint32_t rank) {
    for (auto& o : members) {
      if (!o.waiting_get || generation_of_key(o.wait_key) != g) continue;
      o.waiting_get = false;
      store::Writer w(static_cast<uint8_t>(store::Reply::kLost));
      w.u32(rank);
      queue(o, w);
    }
  }

  // The rank in generation g of a member that has left it, if any.
  bool someone_left(uint32_t g, uint32_t* rank) {
    if (g == kNoGeneration) return false;
    if (g != current) {
      *rank = 0;
      return true;
    }
    for (uint32_t id : current_members) {
      Member* m = find(id);
      if (!m || !m->in_state({State::kIn, State::kDone})) {
        *rank = m ? m->rank : 0;
        return true;
      }
    }
    return false;
  }

  // ---------------------------------------------------------------- requests
  void hello(Member& m, store::Reader& r) {
    std::string token = r.str();
    std::string node = r.str(), label = r.str();
    uint32_t pid = r.u32();
    uint64_t order = r.u64();
    if (!r.done())
      return reject(m,
                    "malformed HELLO: not what this version of Tandem sends (are the launcher "
                    "and every rank on the same Tandem?)");
    if (!same_token(token, settings.token)) return reject(m, "wrong job token");
    if (node.empty() || node.size() > 255) return reject(m, "bad node name");
    m.authed = true;
    m.id = next_id++;
    m.node = node;
    m.label = label.empty() ? node : label;
    m.pid = pid;
    m.order = order;
    if (!reached) {
      reached = true;
      const std::string host = local_of(m.fd.get());
      if (settings.on_reached && !host.empty()) settings.on_reached(host, svc->port_);
    }
    store::Writer w(static_cast<uint8_t>(Push::kWelcome));
    w.u32(m.id)
        .u64(static_cast<uint64_t>(settings.elastic_timeout.count()))
        .u64(static_cast<uint64_t>(settings.ping_timeout.count()));
    queue(m, w);
  }

  void join(Member& m, store::Reader& r) {
    uint32_t last = r.u32();
    std::string endpoint = r.str();
    if (!r.done()) return reject(m, "malformed JOIN");
    if (!failure.empty()) return fail_one(m, failure);
    if (m.in_state({State::kRemoved, State::kUnresponsive, State::kLost}) ||
        blacklist.count(m.node))
      return remove(m);
    const bool was_in = m.state == State::kIn;
    m.state = State::kWaiting;
    m.last = last;
    m.probe_endpoint = endpoint;
    m.join_seq = ++join_seq;
    m.joined_at = Clock::now();
    m.reported = false;
    m.unreachable.clear();
    m.ping_out = false;
    if (current == kNoGeneration && first_join == Clock::time_point{}) first_join = m.joined_at;
    if (was_in && m.generation == current) left_generation(current, m.rank);
    if (last == kNoGeneration && current != kNoGeneration) announce_newcomers();
  }

  void reach(Member& m, store::Reader& r) {
    uint32_t rnd = r.u32();
    uint32_t n = r.u32();
    std::vector<uint32_t> bad;
    for (uint32_t i = 0; i < n && r.ok(); ++i) bad.push_back(r.u32());
    if (!r.done()) return reject(m, "malformed REACH");
    if (!probing || rnd != round || m.state != State::kWaiting) return;
    m.reported = true;
    m.unreachable = std::move(bad);
  }

  void get(Member& m, const std::string& key, uint64_t timeout_ms) {
    auto it = kv.find(key);
    if (it != kv.end()) {
      store::Writer w(static_cast<uint8_t>(store::Reply::kValue));
      w.bytes(it->second.data(), it->second.size());
      return queue(m, w);
    }
    uint32_t rank = 0;
    if (someone_left(generation_of_key(key), &rank)) {
      store::Writer w(static_cast<uint8_t>(store::Reply::kLost));
      w.u32(rank);
      return queue(m, w);
    }
    if (timeout_ms == 0) return queue_simple(m, static_cast<uint8_t>(store::Reply::kMissing));
    m.waiting_get = true;
    m.wait_key = key;
    m.wait_deadline =
        Clock::now() + std::chrono::milliseconds(std::min<uint64_t>(timeout_ms, 1ull << 40));
  }

  void set(const std::string& key, Bytes value) {
    for (auto& o : members)
      if (o.waiting_get && o.wait_key == key) {
        o.waiting_get = false;
        store::Writer w(static_cast<uint8_t>(store::Reply::kValue));
        w.bytes(value.data(), value.size());
        queue(o, w);
      }
    kv[key] = std::move(value);
  }

  void handle(Member& m, const uint8_t* p, size_t n) {
    store::Reader r(p, n);
    const uint8_t op = r.u8();
    if (!m.authed) {
      if (op != static_cast<uint8_t>(Op::kHello)) return reject(m, "first message is not HELLO");
      return hello(m, r);
    }
    switch (op) {
      case static_cast<uint8_t>(Op::kJoin): return join(m, r);
      case static_cast<uint8_t>(Op::kReach): return reach(m, r);
      case static_cast<uint8_t>(Op::kDone):
        m.said_done = true;
        if (m.state == State::kIn) m.state = State::kDone;
        return;
      case static_cast<uint8_t>(Op::kPong): {
        uint32_t nonce = r.u32();
        if (m.ping_out && nonce == m.ping_nonce) {
          m.ping_out = false;
          m.next_ping = Clock::now() + settings.ping_timeout;
        }
        return;
      }
      case static_cast<uint8_t>(store::Op::kSet): {
        std::string key = r.str();
        Bytes value = r.bytes();
        if (!r.done()) return reject(m, "malformed SET");
        set(key, std::move(value));
        return queue_simple(m, static_cast<uint8_t>(store::Reply::kOk));
      }
      case static_cast<uint8_t>(store::Op::kGet): {
        std::string key = r.str();
        uint64_t timeout = r.u64();
        if (!r.done()) return reject(m, "malformed GET");
        if (m.waiting_get) return reject(m, "request sent while a GET is pending");
        return get(m, key, timeout);
      }
      case static_cast<uint8_t>(store::Op::kDel): {
        std::string key = r.str();
        if (r.done()) kv.erase(key);
        return;
      }
      default: return reject(m, "unknown request " + std::to_string(op));
    }
  }

  // The process is gone: its connection closed (or failed).
  void on_closed(Member& m) {
    if (m.closed) return;
    m.closed = true;
    m.fd.reset();
    m.out.clear();
    if (!m.authed) return;
    if (m.said_done && m.in_state({State::kIn, State::kDone})) {
      m.state = State::kDone;
      return;
    }
    if (m.in_state({State::kNew, State::kWaiting, State::kIn})) {
      const bool in_current = m.state == State::kIn && m.generation == current;
      m.state = State::kLost;
      if (in_current) {
        left_generation(current, m.rank);
        settings.report("rank " + std::to_string(m.rank) + " (" + m.label + ", pid " +
                        std::to_string(m.pid) + ") of generation " + std::to_string(current) +
                        " is gone: its process exited or was killed");
      }
    }
  }

  // ---------------------------------------------------------------- answers
  void remove(Member& m) {
    m.state = State::kRemoved;
    store::Writer w(static_cast<uint8_t>(Push::kRemoved));
    w.str(m.label + " has been removed from elastic job (its node " + m.node +
          " was excluded after a failure there or a lost connection to it)");
    queue(m, w);
  }

  void fail_one(Member& m, const std::string& why) {
    m.state = State::kFailed;
    store::Writer w(static_cast<uint8_t>(Push::kFailed));
    w.str(why);
    queue(m, w);
  }

  void fail_job(const std::string& why) {
    if (failure.empty()) {
      failure = why;
      settings.report("elastic job failed: " + why);
    }
    probing = false;
    below_min = false;
    for (auto& m : members)
      if (m.authed && m.state == State::kWaiting) fail_one(m, why);
  }

  void announce_newcomers() {
    if (announced || probing || current == kNoGeneration || failure.size()) return;
    if (static_cast<int>(current_members.size()) >= settings.max_size) return;
    uint64_t ts = static_cast<uint64_t>(std::time(nullptr));
    ts = std::max(ts, last_update_ts + 1);
    last_update_ts = ts;
    announced = true;
    for (uint32_t id : current_members) {
      Member* m = find(id);
      if (!m || m->state != State::kIn) continue;
      store::Writer w(static_cast<uint8_t>(Push::kUpdate));
      w.u64(ts).u32(kAddedHosts);
      queue(*m, w);
    }
  }

  void ping(Member& m, Clock::time_point now) {
    if (m.ping_out || now < m.next_ping || m.closed) return;
    m.ping_out = true;
    m.ping_nonce = next_id * 7919u + static_cast<uint32_t>(join_seq);
    m.ping_deadline = now + settings.ping_timeout;
    store::Writer w(static_cast<uint8_t>(Push::kPing));
    w.u32(m.ping_nonce);
    queue(m, w);
  }

  void unresponsive(Member& m, const std::string& why) {
    const bool in_current = m.state == State::kIn && m.generation == current;
    m.state = State::kUnresponsive;
    m.ping_out = false;
    if (in_current) left_generation(current, m.rank);
    settings.report("rank " + std::to_string(m.rank) + " (" + m.label + ", pid " +
                    std::to_string(m.pid) + ") of generation " + std::to_string(m.generation) +
                    " " + why + ": ejected");
  }

  // ---------------------------------------------------------------- forming
  // The members asking to join, in priority order: the current generation's
  // by their rank there, then new processes by the launcher's order.
  std::vector<Member*> joiners() {
    std::vector<Member*> out;
    for (uint32_t id : current_members) {
      Member* m = find(id);
      if (m && m->state == State::kWaiting && m->last == current) out.push_back(m);
    }
    std::vector<Member*> rest;
    for (auto& m : members)
      if (m.authed && m.state == State::kWaiting &&
          std::find(out.begin(), out.end(), &m) == out.end())
        rest.push_back(&m);
    std::sort(rest.begin(), rest.end(), [](const Member* a, const Member* b) {
      return a->order != b->order ? a->order < b->order : a->join_seq < b->join_seq;
    });
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
  }

  void exclude_node(const std::string& node, const std::string& why) {
    if (!blacklist.insert(node).second) return;
    settings.report("node " + node + " excluded from the job: " + why);
  }

  // Whether the next generation can form now (see the file comment).
  bool formation_due(const std::vector<Member*>& waiting, Clock::time_point now) {
    if (waiting.empty()) return false;
    if (current == kNoGeneration) {
      if (settings.expected > 0 && static_cast<int>(waiting.size()) >= settings.expected)
        return true;
      return now >= first_join + settings.join_timeout;
    }
    bool triggered = false;
    for (Member* m : waiting) triggered = triggered || m->last == current;
    if (!triggered) {
      // Only newcomers wait: the running generation lets them in at its
      // next commit. One that waits past the elastic timeout is refused.
      for (Member* m : waiting)
        if (now >= m->joined_at + settings.elastic_timeout)
          fail_one(*m,
                   "no generation admitted this process within the elastic timeout (" +
                       std::to_string(settings.elastic_timeout.count() / 1000) +
                       " s, HOROVOD_ELASTIC_TIMEOUT): the running ranks did not reach a commit");
      return false;
    }
    if (!straggler_clock) {
      straggler_clock = true;
      straggler_deadline = now + settings.elastic_timeout;
    }
    bool accounted = true;
    for (uint32_t id : current_members) {
      Member* m = find(id);
      if (!m || m->state != State::kIn) continue;
      if (now >= straggler_deadline) {
        unresponsive(*m, "did not leave its generation within the elastic timeout");
        continue;
      }
      accounted = false;
      ping(*m, now);
    }
    return accounted;
  }

  void start_round(Clock::time_point now) {
    // Members of the generation that died or went silent take their node out.
    for (uint32_t id : current_members) {
      Member* m = find(id);
      if (m && m->in_state({State::kLost, State::kUnresponsive}))
        exclude_node(m->node,
                     m->label + " " + (m->state == State::kLost ? "died" : "stopped answering"));
    }
    candidates.clear();
    for (Member* m : joiners()) {
      if (blacklist.count(m->node)) {
        remove(*m);
        continue;
      }
      candidates.push_back({m->id, m->node});
    }
    if (candidates.empty()) return;
    std::set<std::string> nodes;
    for (const auto& c : candidates) nodes.insert(c.node);
    if (nodes.size() == 1) return decide(false);
    ++round;
    probing = true;
    probe_deadline = now + 2 * settings.ping_timeout;
    for (const auto& c : candidates) {
      Member* m = find(c.member);
      m->reported = false;
      store::Writer w(static_cast<uint8_t>(Push::kCandidates));
      w.u32(round);
      const std::vector<uint32_t> targets = probe_targets(candidates, c.member);
      w.u32(static_cast<uint32_t>(targets.size()));
      for (uint32_t t : targets) w.u32(t).str(find(t)->probe_endpoint);
      queue(*m, w);
    }
  }

  bool round_complete(Clock::time_point now) {
    if (now >= probe_deadline) return true;
    for (const auto& c : candidates) {
      Member* m = find(c.member);
      if (m && m->state == State::kWaiting && !m->reported) return false;
    }
    return true;
  }

  // probed: a probe round ran (else there was one node and nothing to probe).
  void decide(bool probed) {
    probing = false;
    std::vector<std::pair<uint32_t, uint32_t>> cut;
    std::set<uint32_t> silent;
    std::vector<Candidate> live;
    for (const auto& c : candidates) {
      Member* m = find(c.member);
      if (!m || m->state != State::kWaiting) {
        silent.insert(c.member);  // died during the round
        live.push_back(c);
        continue;
      }
      live.push_back(c);
      if (probed && !m->reported) silent.insert(c.member);
      for (uint32_t b : m->unreachable) cut.push_back({c.member, b});
    }
    Selection sel = select_members(live, cut, silent, static_cast<size_t>(settings.max_size));
    for (const std::string& n : sel.excluded_nodes)
      exclude_node(n, "unreachable from the nodes of lower ranks, or it did not answer");
    for (const auto& c : live) {
      Member* m = find(c.member);
      if (m && m->state == State::kWaiting && blacklist.count(m->node)) remove(*m);
    }
    std::vector<Member*> kept;
    for (uint32_t id : sel.kept) {
      Member* m = find(id);
      if (m && m->state == State::kWaiting) kept.push_back(m);
    }
    if (current != kNoGeneration) {
      bool any_old = false;
      for (Member* m : kept) any_old = any_old || m->last == current;
      if (!any_old && !kept.empty())
        return fail_job("No hosts from previous set remaining, unable to broadcast state.");
      if (settings.reset_limit >= 0 && resets >= settings.reset_limit)
        return fail_job(
            "Horovod was shutdown because number of resets during elastic job "
            "exceeded limit: " +
            std::to_string(settings.reset_limit));
    }
    if (static_cast<int>(kept.size()) < settings.min_size) {
      if (!below_min) {
        below_min = true;
        min_deadline = Clock::now() + settings.elastic_timeout;
        settings.report("only " + std::to_string(kept.size()) + " of at least " +
                        std::to_string(settings.min_size) +
                        " processes can form the next generation (TANDEM_ELASTIC_MIN_NP): "
                        "waiting up to " +
                        std::to_string(settings.elastic_timeout.count() / 1000) +
                        " s for more (HOROVOD_ELASTIC_TIMEOUT)");
      }
      below_min_count = joiners().size();
      return;
    }
    form(kept);
  }

  void form(const std::vector<Member*>& kept) {
    if (current != kNoGeneration) ++resets;
    current = current == kNoGeneration ? 0 : current + 1;
    current_members.clear();
    std::vector<std::string> nodes;
    for (Member* m : kept) {
      current_members.push_back(m->id);
      nodes.push_back(m->node);
    }
    const std::string job_id = base_job_id + "-g" + std::to_string(current);
    for (size_t i = 0; i < kept.size(); ++i) {
      Member* m = kept[i];
      m->state = State::kIn;
      m->generation = current;
      m->rank = static_cast<uint32_t>(i);
      m->ping_out = false;
      m->next_ping = Clock::time_point{};
      store::Writer w(static_cast<uint8_t>(Push::kAssign));
      w.u32(current).u32(m->rank).u32(static_cast<uint32_t>(kept.size())).str(job_id);
      w.u32(static_cast<uint32_t>(nodes.size()));
      for (const auto& n : nodes) w.str(n);
      queue(*m, w);
    }
    // Every member of an older generation has left it.
    for (auto it = kv.begin(); it != kv.end();)
      it = generation_of_key(it->first) < current ? kv.erase(it) : std::next(it);
    straggler_clock = false;
    below_min = false;
    announced = false;
    settings.report("generation " + std::to_string(current) + " formed: " +
                    std::to_string(kept.size()) + " ranks on " + describe_nodes(nodes));
    // Newcomers that arrived meanwhile, or were deferred past the maximum.
    for (auto& m : members)
      if (m.authed && m.state == State::kWaiting && m.last == kNoGeneration) {
        announce_newcomers();
        break;
      }
  }

  static std::string describe_nodes(const std::vector<std::string>& nodes) {
    std::vector<std::string> distinct;
    for (const auto& n : nodes)
      if (std::find(distinct.begin(), distinct.end(), n) == distinct.end()) distinct.push_back(n);
    std::string out;
    for (const auto& n : distinct) out += (out.empty() ? "" : ",") + n;
    return out;
  }

  // The job is over but ejected processes still hold the step (on_finished).
  void check_finished() {
    if (finished_reported || current == kNoGeneration || !settings.on_finished) return;
    for (uint32_t id : current_members) {
      Member* m = find(id);
      if (m && !m->closed) return;
    }
    int stuck = 0;
    for (auto& m : members) {
      if (!m.authed || m.closed) continue;
      if (m.state == State::kWaiting || m.state == State::kNew) return;
      if (m.in_state({State::kUnresponsive, State::kRemoved})) ++stuck;
    }
    if (stuck == 0) return;
    finished_reported = true;
    settings.report("the elastic job is over; ending the step: " + std::to_string(stuck) +
                    " ejected process" + (stuck == 1 ? "" : "es") + " still hold it");
    settings.on_finished(stuck);
  }

  void advance() {
    check_finished();
    const auto now = Clock::now();
    // Pings that went unanswered.
    for (auto& m : members)
      if (m.ping_out && now >= m.ping_deadline && m.state == State::kIn)
        unresponsive(m, "did not answer the service's ping within " +
                            std::to_string(settings.ping_timeout.count()) +
                            " ms (TANDEM_ELASTIC_PING_TIMEOUT)");
    if (!failure.empty()) return;
    if (probing) {
      if (round_complete(now)) decide(true);
      return;
    }
    std::vector<Member*> waiting = joiners();
    if (below_min) {
      if (now >= min_deadline)
        return fail_job(
            "Timed out waiting for minimum number of slots to become available. "
            "Please check that you have enough resources to run at least " +
            std::to_string(settings.min_size) + " Horovod processes.");
      if (waiting.size() == below_min_count) return;
      return start_round(now);
    }
    if (formation_due(waiting, now)) start_round(now);
  }

  Deadline next_wakeup() {
    Deadline next = Clock::now() + std::chrono::seconds(1);
    for (auto& m : members) {
      if (!m.authed && !m.closed) next = std::min(next, m.hello_deadline);
      if (m.waiting_get) next = std::min(next, m.wait_deadline);
      if (m.ping_out) next = std::min(next, m.ping_deadline);
    }
    if (probing) next = std::min(next, probe_deadline);
    return next;
  }

  void expire() {
    const auto now = Clock::now();
    for (auto& m : members) {
      if (!m.authed && !m.closed && now >= m.hello_deadline)
        reject(m, "no complete HELLO within " + std::to_string(settings.hello_timeout.count()) +
                      " ms of connecting");
      if (m.waiting_get && now >= m.wait_deadline) {
        m.waiting_get = false;
        queue_simple(m, static_cast<uint8_t>(store::Reply::kMissing));
      }
    }
    // Connections that never authenticated leave no record.
    members.remove_if([](const Member& m) { return m.closed && !m.authed; });
  }

  void read_from(Member& m) {
    uint8_t buf[65536];
    bool gone = false;
    const uint32_t limit = m.authed ? store::kMaxFrame : store::kMaxHelloFrame;
    for (;;) {
      // More than a frame's worth: a whole one is there to handle first;
      // the rest waits in the socket (as the store's server does).
      if (m.in.size() > size_t{limit} + 4) break;
      ssize_t k = ::recv(m.fd.get(), buf, sizeof(buf), 0);
      if (k > 0) {
        m.in.insert(m.in.end(), buf, buf + k);
        continue;
      }
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      gone = true;
      break;
    }
    if (!m.closed && !store::take_frames(
                         m.in,
                         [&](const uint8_t* p, uint32_t n) {
                           handle(m, p, n);
                           return !m.closed;
                         },
                         limit))
      reject(m, store::bad_frame_length(m.in, limit) +
                    (m.authed ? "" : " before HELLO: not a Tandem rank of this version"));
    if (m.closed) {
      m.in.clear();
      return;
    }
    if (gone) on_closed(m);
  }
};

ServiceSettings ServiceSettings::from_environment() {
  ServiceSettings s;
  s.min_size = static_cast<int>(env_int("TANDEM_ELASTIC_MIN_NP"));
  s.max_size = static_cast<int>(env_int("TANDEM_ELASTIC_MAX_NP"));
  if (s.max_size < s.min_size)
    throw InvalidArgument("TANDEM_ELASTIC_MAX_NP=" + std::to_string(s.max_size) +
                          " is below TANDEM_ELASTIC_MIN_NP=" + std::to_string(s.min_size));
  if (const auto limit = env_int_if_set("TANDEM_ELASTIC_RESET_LIMIT")) {
    s.reset_limit = static_cast<int>(*limit);
    note_setting("TANDEM_ELASTIC_RESET_LIMIT", std::to_string(*limit), "");
  } else {
    s.reset_limit = -1;  // no limit
  }
  s.elastic_timeout = env_milliseconds("HOROVOD_ELASTIC_TIMEOUT");
  s.ping_timeout = env_milliseconds("TANDEM_ELASTIC_PING_TIMEOUT");
  s.join_timeout = env_milliseconds("TANDEM_BOOTSTRAP_TIMEOUT");
  return s;
}

MembershipService::MembershipService(ServiceSettings settings)
    : impl_(std::make_unique<Impl>(this, std::move(settings))) {
  listen_fd_ = listen_any(impl_->settings.port, &port_);
  wake_fd_ = Fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_fd_) throw SystemError("eventfd for the elastic membership service", errno);
  thread_ = std::thread([this] { run(); });
}

MembershipService::~MembershipService() {
  uint64_t one = 1;
  (void)!::write(wake_fd_.get(), &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
}

ServiceSummary MembershipService::summary() const {
  std::lock_guard<std::mutex> lock(summary_mu_);
  return summary_;
}

void MembershipService::run() {
  pthread_setname_np(pthread_self(), "tandem-members");
  Impl& s = *impl_;
  std::vector<pollfd> pfds;
  std::vector<Member*> polled;
  for (;;) {
    pfds.assign({{wake_fd_.get(), POLLIN, 0}, {listen_fd_.get(), POLLIN, 0}});
    polled.clear();
    for (auto& m : s.members) {
      if (m.closed) continue;
      short ev = POLLIN;
      if (!m.out.empty()) ev |= POLLOUT;
      pfds.push_back({m.fd.get(), ev, 0});
      polled.push_back(&m);
    }
    int n = ::poll(pfds.data(), pfds.size(), ms_left(s.next_wakeup()));
    if (n < 0 && errno != EINTR) {
      TANDEM_ERROR(elastic, "membership service: poll: %s; the service stops serving",
                   std::strerror(errno));
      return;
    }
    if (pfds[0].revents) return;
    for (size_t i = 0; i < polled.size(); ++i) {
      Member& m = *polled[i];
      const short rev = pfds[i + 2].revents;
      if (!m.closed && (rev & (POLLIN | POLLHUP | POLLERR))) s.read_from(m);
      if (!m.closed && !m.out.empty()) s.write_to(m);
    }
    if (pfds[1].revents & POLLIN) {
      for (;;) {
        int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;
        set_nodelay(fd);
        Member m;
        m.fd = Fd(fd);
        m.peer = peer_of(fd);
        m.hello_deadline = Clock::now() + s.settings.hello_timeout;
        s.members.push_back(std::move(m));
      }
    }
    s.expire();
    s.advance();
    s.publish();
  }
}

}  // namespace elastic
}  // namespace tandem
