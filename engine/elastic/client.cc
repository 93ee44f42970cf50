#include "elastic/client.h"

#include <cerrno>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/env.h"
#include "common/errors.h"
#include "elastic/protocol.h"

namespace tandem {
namespace elastic {

namespace {

constexpr const char* kAddrVariable = "TANDEM_ELASTIC_ADDR";
// How long past a request's own deadline the service may take to answer.
constexpr auto kGrace = std::chrono::seconds(5);

std::string node_name() {
  if (auto v = env::get("TANDEM_NODE_NAME")) return *v;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) throw SystemError("gethostname", errno);
  return host;
}

}  // namespace

bool ElasticClient::requested() { return env::get(kAddrVariable).has_value(); }

namespace {
std::mutex instance_mu;
ElasticClient* the_client = nullptr;  // for the life of the process
}  // namespace

ElasticClient* ElasticClient::existing() {
  std::lock_guard<std::mutex> lock(instance_mu);
  return the_client;
}

ElasticClient& ElasticClient::instance() {
  std::lock_guard<std::mutex> lock(instance_mu);
  ElasticClient*& client = the_client;
  if (client) return *client;
  auto addr = env::get(kAddrVariable);
  auto token = env::get("TANDEM_ELASTIC_TOKEN");
  if (!addr || !token)
    throw BootstrapError(
        "an elastic launch sets both TANDEM_ELASTIC_ADDR and TANDEM_ELASTIC_TOKEN; "
        "not set:" +
        std::string(addr ? "" : " TANDEM_ELASTIC_ADDR") + (token ? "" : " TANDEM_ELASTIC_TOKEN") +
        " (start the job with srun --horovod=elastic or tandem-run --elastic)");
  const std::string node = node_name();
  client = new ElasticClient(parse_host_port(*addr, kAddrVariable), *token, node,
                             env::get("TANDEM_ELASTIC_LABEL").value_or(node));
  return *client;
}

ElasticClient::ElasticClient(const HostPort& addr, const std::string& token,
                             const std::string& node, const std::string& label)
    : addr_(addr),
      name_("the elastic membership service at " + addr.str()),
      last_generation_(kNoGeneration) {
  const Deadline deadline = Clock::now() + bootstrap_timeout();
  fd_ = connect_until(addr, deadline);
  store::Writer w(static_cast<uint8_t>(Op::kHello));
  // TANDEM_ELASTIC_ORDER: the launcher's rank of this process (srun's step
  // and task id), which orders new processes of one generation.
  const auto order = env::get_int("TANDEM_ELASTIC_ORDER");
  w.str(token)
      .str(node)
      .str(label)
      .u32(static_cast<uint32_t>(getpid()))
      .u64(static_cast<uint64_t>(order.value_or(0)));
  const Bytes& f = w.frame();
  if (!send_all(fd_.get(), f.data(), f.size(), deadline, name_))
    throw BootstrapError(name_ + " did not take our HELLO in time");
  uint8_t len_buf[4];
  if (!recv_all(fd_.get(), len_buf, 4, deadline + kGrace, name_))
    throw BootstrapError(name_ + " did not answer HELLO in time");
  const uint32_t len = store::frame_length(len_buf);
  if (len == 0 || len > store::kMaxFrame) throw BootstrapError(name_ + " sent a bad frame length");
  Bytes body(len);
  if (!recv_all(fd_.get(), body.data(), len, deadline + kGrace, name_))
    throw BootstrapError(name_ + " stopped in the middle of its answer to HELLO");
  store::Reader r(body.data(), body.size());
  const uint8_t code = r.u8();
  if (code == static_cast<uint8_t>(store::Reply::kRejected))
    throw BootstrapError(name_ + " refused this process: " + r.str() +
                         " (TANDEM_ELASTIC_TOKEN must be the one the launcher set)");
  if (code != static_cast<uint8_t>(Push::kWelcome))
    throw BootstrapError(name_ + " answered HELLO oddly");
  member_ = r.u32();
  elastic_timeout_ = std::chrono::milliseconds(r.u64());
  ping_timeout_ = std::chrono::milliseconds(r.u64());
  if (!r.done()) throw BootstrapError(name_ + " sent a malformed WELCOME");
  reader_ = std::thread([this] { reader(); });
  reader_.detach();  // lives as long as the process, like the connection
}

// Reads every frame the service sends: PINGs are answered here, UPDATEs
// queued, anything else is the answer to the request in progress.
void ElasticClient::reader() {
  pthread_setname_np(pthread_self(), "tandem-elastic");
  Bytes in;
  uint8_t buf[65536];
  std::string why;
  while (why.empty()) {
    pollfd p{fd_.get(), POLLIN, 0};
    int n = ::poll(&p, 1, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      why = "poll failed";
      break;
    }
    ssize_t k = ::recv(fd_.get(), buf, sizeof(buf), 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (k <= 0) {
      why = "it closed the connection";
      break;
    }
    in.insert(in.end(), buf, buf + k);
    const bool ok = store::take_frames(in, [&](const uint8_t* body, uint32_t len) {
      store::Reader r(body, len);
      const uint8_t code = r.u8();
      if (code == static_cast<uint8_t>(Push::kPing)) {
        store::Writer w(static_cast<uint8_t>(Op::kPong));
        w.u32(r.u32());
        try {
          send(w.frame());
        } catch (const Error&) {}
      } else if (code == static_cast<uint8_t>(Push::kUpdate)) {
        const uint64_t ts = r.u64();
        const uint32_t kind = r.u32();
        std::lock_guard<std::mutex> lock(mu_);
        updates_.push_back({ts, kind});
        cv_.notify_all();
      } else {
        std::lock_guard<std::mutex> lock(mu_);
        replies_.emplace_back(body, body + len);
        cv_.notify_all();
      }
      return true;
    });
    if (!ok) why = "it sent a bad frame length";
  }
  std::lock_guard<std::mutex> lock(mu_);
  broken_ = true;
  broken_why_ = why;
  cv_.notify_all();
}

void ElasticClient::gone(const std::string& why) {
  throw BootstrapError(name_ + " is gone (" + why +
                       "): srun (or tandem-run), which runs it, exited or was killed");
}

void ElasticClient::send(const Bytes& frame) {
  std::lock_guard<std::mutex> lock(send_mu_);
  try {
    if (!send_all(fd_.get(), frame.data(), frame.size(), Clock::now() + ping_timeout_ + kGrace,
                  name_))
      gone("it stopped reading");
  } catch (const PeerLostError& e) { gone(e.what()); }
}

Bytes ElasticClient::await(Deadline deadline, const char* what) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_until(lock, deadline + kGrace, [&] { return !replies_.empty() || broken_; }))
    throw TimeoutError(name_ + " did not answer " + what + " in time");
  if (!replies_.empty()) {
    Bytes f = std::move(replies_.front());
    replies_.pop_front();
    return f;
  }
  gone(broken_why_);
}

JoinAnswer ElasticClient::join(const Bytes& probe_endpoint, Prober probe, void* ctx) {
  std::lock_guard<std::mutex> request(request_mu_);
  store::Writer w(static_cast<uint8_t>(Op::kJoin));
  w.u32(last_generation_).bytes(probe_endpoint.data(), probe_endpoint.size());
  send(w.frame());
  // The service answers within its elastic timeout (stragglers, the minimum
  // size, newcomers waiting for a commit), plus probe rounds.
  const auto limit = elastic_timeout_ + 4 * ping_timeout_;
  for (;;) {
    Bytes f = await(Clock::now() + limit, "JOIN");
    store::Reader r(f.data(), f.size());
    const uint8_t code = r.u8();
    if (code == static_cast<uint8_t>(Push::kCandidates)) {
      const uint32_t round = r.u32();
      const uint32_t n = r.u32();
      std::vector<ProbeTarget> targets;
      for (uint32_t i = 0; i < n && r.ok(); ++i) {
        ProbeTarget t;
        t.member = r.u32();
        t.endpoint = r.bytes();
        targets.push_back(std::move(t));
      }
      if (!r.done()) gone("it sent a malformed CANDIDATES");
      const std::vector<uint32_t> bad = probe(targets, ping_timeout_, ctx);
      store::Writer rep(static_cast<uint8_t>(Op::kReach));
      rep.u32(round).u32(static_cast<uint32_t>(bad.size()));
      for (uint32_t m : bad) rep.u32(m);
      send(rep.frame());
      continue;
    }
    JoinAnswer a;
    if (code == static_cast<uint8_t>(Push::kAssign)) {
      a.kind = JoinAnswer::kAssigned;
      a.assignment.generation = r.u32();
      a.assignment.rank = static_cast<int>(r.u32());
      a.assignment.size = static_cast<int>(r.u32());
      a.assignment.job_id = r.str();
      const uint32_t n = r.u32();
      for (uint32_t i = 0; i < n && r.ok(); ++i) a.assignment.nodes.push_back(r.str());
      if (!r.done() || a.assignment.nodes.size() != static_cast<size_t>(a.assignment.size))
        gone("it sent a malformed ASSIGN");
      last_generation_ = a.assignment.generation;
      return a;
    }
    if (code == static_cast<uint8_t>(Push::kRemoved) ||
        code == static_cast<uint8_t>(Push::kFailed)) {
      a.kind =
          code == static_cast<uint8_t>(Push::kRemoved) ? JoinAnswer::kRemoved : JoinAnswer::kFailed;
      a.message = r.str();
      return a;
    }
    gone("it answered JOIN with " + std::to_string(code));
  }
}

void ElasticClient::set(const std::string& key, const Bytes& value, Deadline deadline) {
  std::lock_guard<std::mutex> request(request_mu_);
  store::Writer w(static_cast<uint8_t>(store::Op::kSet));
  w.str(key).bytes(value.data(), value.size());
  send(w.frame());
  Bytes reply = await(deadline, "SET");
  if (reply.empty() || reply[0] != static_cast<uint8_t>(store::Reply::kOk))
    gone("an odd answer to SET");
}

std::optional<Bytes> ElasticClient::get(const std::string& key, Deadline deadline) {
  std::lock_guard<std::mutex> request(request_mu_);
  store::Writer w(static_cast<uint8_t>(store::Op::kGet));
  w.str(key).u64(static_cast<uint64_t>(ms_left(deadline)));
  send(w.frame());
  Bytes reply = await(deadline, "GET");
  store::Reader r(reply.data(), reply.size());
  switch (static_cast<store::Reply>(r.u8())) {
    case store::Reply::kValue: return r.bytes();
    case store::Reply::kMissing: return std::nullopt;
    case store::Reply::kLost:
      throw PeerLostError("rank " + std::to_string(r.u32()) +
                          " left this generation of the elastic job while it formed (it died, "
                          "stopped answering, or failed to form it)");
    default: gone("an odd answer to GET");
  }
}

void ElasticClient::del(const std::string& key) {
  std::lock_guard<std::mutex> request(request_mu_);
  store::Writer w(static_cast<uint8_t>(store::Op::kDel));
  w.str(key);
  send(w.frame());
}

void ElasticClient::done() {
  store::Writer w(static_cast<uint8_t>(Op::kDone));
  send(w.frame());
}

bool ElasticClient::wait_update(Deadline deadline, uint64_t* timestamp, uint32_t* kind) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_until(lock, deadline, [&] { return !updates_.empty() || broken_; })) return false;
  if (updates_.empty()) gone(broken_why_);
  *timestamp = updates_.front().first;
  *kind = updates_.front().second;
  updates_.pop_front();
  return true;
}

}  // namespace elastic
}  // namespace tandem
