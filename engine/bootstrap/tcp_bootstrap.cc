#include "bootstrap/tcp_bootstrap.h"

#include <cstdio>
#include <map>
#include <mutex>

#include "bootstrap/identity.h"
#include "bootstrap/tcp_store_client.h"
#include "bootstrap/tcp_store_server.h"
#include "common/errors.h"
#include "common/log.h"

namespace tandem {

namespace {

std::string ms_text(std::chrono::milliseconds t) { return std::to_string(t.count()) + " ms"; }

// The store a rank 0 hosts outlives its TcpBootstrap: a process that leaves
// the job and joins again (tandem_finalize, tandem_init) finds it still
// serving, as do the other ranks, some of which may already have joined the
// next session while rank 0 waits for the slow ones to leave this one. One
// per port, for the life of the process (never destroyed: its thread ends
// with the process, like the ranks' connections to it).
std::shared_ptr<TcpStoreServer> hosted_store(const std::string& token, uint16_t port) {
  static std::mutex mu;
  static auto* stores = new std::map<uint16_t, std::shared_ptr<TcpStoreServer>>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = stores->find(port);
  if (it != stores->end()) {
    if (!it->second->accepts(token))
      throw BootstrapError("rank 0 already hosts a rendezvous store on port " +
                           std::to_string(port) + " for another job token");
    return it->second;
  }
  auto store = std::make_shared<TcpStoreServer>(token, port);
  (*stores)[port] = store;
  return store;
}

// Once per job, from rank 0: the job runs, but slower than it could.
void warn_split_nodes(const std::vector<std::string>& keys) {
  std::map<std::string, std::pair<int, std::string>> first;  // node name -> (rank, domain)
  for (int r = 0; r < static_cast<int>(keys.size()); ++r) {
    const auto tab = keys[r].find('\t');
    const std::string name = keys[r].substr(0, tab);
    const std::string domain = tab == std::string::npos ? "" : keys[r].substr(tab + 1);
    auto it = first.emplace(name, std::make_pair(r, domain)).first;
    if (it->second.second == domain) continue;
    TANDEM_WARN(bootstrap,
                "ranks %d and %d run on node %s but share no /dev/shm or PID namespace "
                "(%s vs %s): they exchange data over TCP instead of shared memory. Give the "
                "containers the host's /dev/shm and PID namespace for speed (docs/containers.md)",
                it->second.first, r, name.c_str(), it->second.second.c_str(), domain.c_str());
    return;
  }
}

}  // namespace

TcpBootstrap::TcpBootstrap(Options options) : options_(std::move(options)) {
  const auto deadline = Clock::now() + options_.timeout;
  if (options_.host_store) {
    try {
      server_ = hosted_store(options_.token, options_.addr.port);
    } catch (const SystemError& e) {
      throw BootstrapError(std::string("rank 0 cannot run the rendezvous store: ") + e.what() +
                           ": pick a free port in TANDEM_RENDEZVOUS_ADDR (or run the store "
                           "elsewhere with TANDEM_RENDEZVOUS_SERVE=external)");
    }
  }
  client_ = std::make_unique<TcpStoreClient>(options_.addr, options_.token, options_.rank,
                                             options_.size, deadline);
  session_ = client_->session();
  prefix_ = "s" + std::to_string(session_) + "/";
  // Identity exchange: "<node name>\t<node domain>\n<job id proposal>";
  // rank 0's job id wins.
  std::string mine =
      options_.node_name + "\t" + options_.node_domain + "\n" +
      (options_.job_id.empty() && options_.rank == 0 ? random_job_id("tcp") : options_.job_id);
  identity_.rank = options_.rank;
  identity_.size = options_.size;
  auto all = allgather(Bytes(mine.begin(), mine.end()), options_.timeout);
  std::vector<std::string> nodes;
  std::string job_id;
  for (int r = 0; r < options_.size; ++r) {
    std::string s(all[r].begin(), all[r].end());
    auto nl = s.find('\n');
    nodes.push_back(s.substr(0, nl));
    if (r == 0) job_id = s.substr(nl + 1);
  }
  // Ranks of one node that share no /dev/shm or PID namespace (containers
  // that each got their own) count as nodes of their own and talk over TCP.
  if (options_.rank == 0) warn_split_nodes(nodes);
  identity_ = identity_from_nodes(options_.rank, nodes, job_id);
}

TcpBootstrap::~TcpBootstrap() {
  client_.reset();  // BYE: this rank leaves cleanly
  // The store stays up (hosted_store) but this process may exit next: wait
  // until the session's other ranks are done with it.
  if (server_ && !server_->wait_until_session_left(session_, Clock::now() + options_.timeout))
    TANDEM_WARN(bootstrap,
                "rank 0 leaves while ranks of its session are still connected to the "
                "rendezvous store it hosts after %lld ms",
                static_cast<long long>(options_.timeout.count()));
}

// Lists the ranks whose key under prefix is not set (looking, not waiting).
std::string TcpBootstrap::missing_ranks(const std::string& prefix) {
  std::string out;
  int count = 0;
  for (int r = 0; r < options_.size; ++r) {
    if (client_->get(prefix + std::to_string(r), Clock::now())) continue;
    if (++count <= 16) out += (out.empty() ? "" : ", ") + std::to_string(r);
  }
  if (count > 16) out += " and " + std::to_string(count - 16) + " more";
  return (count == 1 ? "rank " : "ranks ") + out;
}

std::vector<Bytes> TcpBootstrap::allgather(const Bytes& mine, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string prefix = prefix_ + "ag/" + std::to_string(next_op_++) + "/";
  const std::string my_key = prefix + std::to_string(identity_.rank);
  auto earlier_keys = std::move(own_keys_);
  own_keys_ = {my_key};
  std::vector<Bytes> out;
  try {
    client_->set(my_key, mine, deadline);
    // One request for every rank's value: one server thread answers N of
    // them per allgather instead of N*N GETs.
    auto all = client_->gather(prefix, options_.size, deadline);
    if (!all)
      throw TimeoutError("bootstrap allgather: " + missing_ranks(prefix) +
                         " did not arrive within " + ms_text(timeout) +
                         " (stopped, still starting, or never launched?)");
    out = std::move(*all);
  } catch (const PeerLostError& e) {
    throw PeerLostError(std::string("bootstrap allgather: ") + e.what());
  }
  for (const auto& k : earlier_keys) client_->del(k);
  return out;
}

Bytes TcpBootstrap::broadcast(const Bytes& value, int root, std::chrono::milliseconds timeout) {
  if (root < 0 || root >= options_.size)
    throw InvalidArgument("bootstrap broadcast: root " + std::to_string(root) +
                          " is not a rank of this job of size " + std::to_string(options_.size));
  const auto deadline = Clock::now() + timeout;
  const std::string key = prefix_ + "bc/" + std::to_string(next_op_++);
  try {
    if (identity_.rank == root) {
      client_->set(key, value, deadline);
      own_keys_.push_back(key);
      return value;
    }
    auto v = client_->get(key, deadline);
    if (!v)
      throw TimeoutError("bootstrap broadcast: root rank " + std::to_string(root) +
                         " did not send within " + ms_text(timeout));
    return std::move(*v);
  } catch (const PeerLostError& e) {
    throw PeerLostError(std::string("bootstrap broadcast: ") + e.what());
  }
}

}  // namespace tandem
