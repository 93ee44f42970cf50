#include "communicator/communicator.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "collectives/collectives.h"
#include "collectives/model.h"
#include "collectives/partners.h"
#include "communicator/node_bootstrap.h"
#include "common/errors.h"
#include "common/settings.h"
#include "shm/shm_settings.h"
#include "shm/shm_group.h"

namespace tandem {
namespace {

void need_buffer(const char* what, const char* name, const void* p, size_t count) {
  if (p == nullptr && count > 0)
    throw InvalidArgument(std::string(what) + ": " + name + " is NULL but holds " +
                          std::to_string(count) + " elements; pass a buffer");
}

size_t need_dtype(const char* what, int dtype) {
  const size_t es = dtype_size(dtype);
  if (es == 0)
    throw InvalidArgument(std::string(what) + ": unknown data type " + std::to_string(dtype) +
                          "; expected a tandem_dtype_t (TANDEM_UINT8 .. TANDEM_BOOL)");
  return es;
}

void need_counts(const char* what, const char* name, const std::vector<size_t>& counts, int size) {
  if (static_cast<int>(counts.size()) != size)
    throw InvalidArgument(std::string(what) + ": " + name + " has " +
                          std::to_string(counts.size()) + " entries, expected one per rank (" +
                          std::to_string(size) + ")");
}

size_t sum(const std::vector<size_t>& v) {
  size_t s = 0;
  for (size_t x : v) s += x;
  return s;
}

// "0-3", "0,2,5": ranks ascending.
std::string ranks_text(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

// What the model picks for an allreduce over n nodes, by size:
// "recursive_doubling up to 16 KiB, ring above".
std::string allreduce_choices(int n) {
  auto bytes_text = [](size_t b) {
    if (b >= (size_t{1} << 30)) return std::to_string(b >> 30) + " GiB";
    if (b >= (size_t{1} << 20)) return std::to_string(b >> 20) + " MiB";
    if (b >= (size_t{1} << 10)) return std::to_string(b >> 10) + " KiB";
    return std::to_string(b) + " B";
  };
  std::string out;
  AllreduceAlgorithm current = choose_allreduce(n, 8);
  for (size_t b = 16; b <= (size_t{1} << 30); b *= 2) {
    const AllreduceAlgorithm next = choose_allreduce(n, b);
    if (next == current) continue;
    out += std::string(algorithm_name(current)) + " below " + bytes_text(b) + ", ";
    current = next;
  }
  return out + algorithm_name(current) + (out.empty() ? " at every size" : " above");
}

std::vector<size_t> scaled(const std::vector<size_t>& v, size_t es) {
  std::vector<size_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[i] * es;
  return out;
}

// The world ranks of each node, ascending; and each rank's local index.
std::vector<std::vector<int>> ranks_by_node(const Identity& id) {
  std::vector<std::vector<int>> nodes(std::max(1, id.cross_size));
  for (int r = 0; r < id.size; ++r) {
    const int node = id.node_of_rank.empty() ? 0 : id.node_of_rank.at(r);
    if (node < 0 || node >= static_cast<int>(nodes.size()))
      throw BootstrapError("rank " + std::to_string(r) + " is on node " + std::to_string(node) +
                           " but the job has " + std::to_string(id.cross_size) + " nodes");
    nodes[node].push_back(r);
  }
  return nodes;
}

// The nodes that have a k-th local rank, in the order of those ranks: the
// order of the transport joining them, as transports take their members
// ascending. Node ids need not follow rank order (PMIX_NODEID numbers the
// allocation's nodes, and a hostfile may put rank 0 on any of them; cyclic
// and arbitrary placements interleave the nodes' ranks), so node i is not
// in general the transport's rank i.
std::vector<int> nodes_in_rank_order(const std::vector<std::vector<int>>& nodes, int k) {
  std::vector<int> out;
  for (size_t n = 0; n < nodes.size(); ++n)
    if (k < static_cast<int>(nodes[n].size())) out.push_back(static_cast<int>(n));
  std::sort(out.begin(), out.end(), [&](int a, int b) { return nodes[a][k] < nodes[b][k]; });
  return out;
}

}  // namespace

CommunicatorOptions CommunicatorOptions::from_environment() {
  CommunicatorOptions o;
  o.timeout = timeout_from_environment();
  o.allreduce_algorithm = allreduce_algorithm_from_environment();
  o.shm_chunk_bytes = shm_chunk_bytes_from_environment();
  o.shm_max_chunk_bytes = shm_max_chunk_bytes_from_environment();
  o.shm_arena_bytes = shm_arena_bytes_from_environment();
  o.shm_spin_us = shm_spin_us_from_environment();
  o.shm_stats = shm_stats_from_environment();
  o.shm_cma = shm_cma_from_environment();
  return o;
}

Communicator::Communicator(std::unique_ptr<Bootstrap> bootstrap, TransportFactory connect,
                           const CommunicatorOptions& options)
    : bootstrap_(std::move(bootstrap)),
      connect_(std::move(connect)),
      options_(options),
      id_(bootstrap_->identity()) {
  ShmOptions so;
  so.timeout = options.timeout;
  so.chunk_bytes = options.shm_chunk_bytes;
  so.max_chunk_bytes = options.shm_max_chunk_bytes;
  so.arena_bytes = options.shm_arena_bytes;
  so.spin_us = options.shm_spin_us;
  so.stats = options.shm_stats;
  so.cma = options.shm_cma;
  so.allreduce_path = static_cast<ShmAllreducePath>(options.shm_allreduce_path);
  shm_ = std::make_unique<ShmGroup>(*bootstrap_, so);
  if (id_.cross_size > 1) {
    if (!connect_)
      throw UnsupportedError("the job spans " + std::to_string(id_.cross_size) +
                             " nodes but this build has no transport between nodes");
    nodes_ = ranks_by_node(id_);
    for (const auto& node : nodes_)
      if (node.size() != nodes_[0].size()) uniform_ = false;
    cross_nodes_ = nodes_in_rank_order(nodes_, id_.local_rank);
    leader_nodes_ = nodes_in_rank_order(nodes_, 0);
    std::vector<int> group;
    for (int node : cross_nodes_) group.push_back(nodes_[node][id_.local_rank]);
    const int index =
        static_cast<int>(std::find(group.begin(), group.end(), id_.rank) - group.begin());
    cross_ = connect_(*bootstrap_, group, options_.timeout,
                      algorithm_partners(index, static_cast<int>(group.size())));
    if (options_.connect_world_at_start) world_transport();
  }
  log_setup();
}

// A few lines on how this Communicator runs its collectives (at info for
// the C API's world, TANDEM_LOG=info; common/log.h).
void Communicator::log_setup() const {
  const log::Level level = options_.setup_log_level;
  if (!log::enabled(level, log::Subsys::coll) && !log::enabled(level, log::Subsys::shm) &&
      !log::enabled(level, log::Subsys::tcp))
    return;
  auto say = [&](log::Subsys s, const std::string& text) {
    if (log::enabled(level, s)) log::write_string(level, s, __FILE__, __LINE__, text);
  };
  std::string layout = std::to_string(id_.size) + (id_.size == 1 ? " rank" : " ranks") + " on " +
                       std::to_string(id_.cross_size) + (id_.cross_size == 1 ? " node" : " nodes");
  if (id_.cross_size > 1) {
    std::string counts;
    for (const auto& node : nodes_)
      counts += (counts.empty() ? "" : "+") + std::to_string(node.size());
    layout += " (" + counts + ")";
    layout += "; this is node " + std::to_string(id_.cross_rank) + ", ranks " +
              ranks_text(nodes_[static_cast<size_t>(id_.cross_rank)]);
  }
  layout +=
      "; local rank " + std::to_string(id_.local_rank) + " of " + std::to_string(id_.local_size);
  say(log::Subsys::coll, "layout: " + layout);
  say(log::Subsys::shm,
      "shared memory: " + std::to_string(shm_->local_size()) + " local ranks, " +
          (shm_->local_size() == 1 ? std::string("nothing to share")
           : shm_->single_copy_timed()
               ? std::string("single copy between ranks (CMA) or staged, by size as timed here")
           : shm_->single_copy() ? std::string("single copy between ranks (CMA)")
           : options_.shm_cma    ? std::string("staged through the segment (CMA refused)")
                                 : std::string("staged through the segment (TANDEM_SHM_CMA=0)")) +
          ", " + std::to_string(options_.shm_chunk_bytes >> 10) + " KiB pipeline steps");
  if (!cross_) {
    say(log::Subsys::tcp, "one node: no transport between nodes");
    return;
  }
  say(log::Subsys::tcp, "between nodes: " + cross_->describe() +
                            (uniform_ ? "" : " (uneven nodes: the local rank 0s carry it)"));
  const std::string choice = options_.allreduce_algorithm == AllreduceAlgorithm::kAuto
                                 ? "auto: " + allreduce_choices(id_.cross_size)
                                 : std::string(algorithm_name(options_.allreduce_algorithm)) +
                                       " (TANDEM_ALLREDUCE_ALGORITHM)";
  say(log::Subsys::coll, "allreduce across " + std::to_string(id_.cross_size) +
                             " nodes: inside each node over shared memory, across them " + choice);
}

Communicator::~Communicator() = default;

Transport& Communicator::world_transport() {
  if (!world_) {
    std::vector<int> all(id_.size);
    for (int r = 0; r < id_.size; ++r) all[r] = r;
    if (id_.cross_size == 1) {
      // Only Adasum uses it on one node (the rest runs over shared memory),
      // possibly after this Communicator's bootstrap stopped answering:
      // set up over the node instead, with Adasum's partners connected.
      node_bootstrap_ = make_node_bootstrap(id_, *shm_);
      world_ =
          connect_(*node_bootstrap_, all, options_.timeout, algorithm_partners(id_.rank, id_.size));
    } else {
      // Alltoall and the direct reducescatter exchange with every rank:
      // nothing is worth connecting ahead, each pair connects on first use.
      world_ = connect_(*bootstrap_, all, options_.timeout, {});
    }
    world_seen_.store(world_.get(), std::memory_order_release);
  }
  return *world_;
}

Transport::Traffic Communicator::traffic() const {
  Transport::Traffic sum;
  for (const Transport* t : {cross_.get(), world_seen_.load(std::memory_order_acquire)}) {
    if (!t) continue;
    const Transport::Traffic x = t->traffic();
    sum.bytes_sent += x.bytes_sent;
    sum.bytes_received += x.bytes_received;
    sum.connections += x.connections;
  }
  return sum;
}

void Communicator::poison(const std::exception_ptr& e) {
  std::string msg = "an earlier collective failed";
  AbortKind kind = AbortKind::kAborted;
  try {
    std::rethrow_exception(e);
  } catch (const PeerLostError& x) {
    msg = x.what();
    kind = AbortKind::kPeerLost;
  } catch (const TimeoutError& x) {
    msg = x.what();
    kind = AbortKind::kTimeout;
  } catch (const std::exception& x) { msg = x.what(); }
  {
    std::lock_guard<std::mutex> lock(poison_mu_);
    if (!failed_) failed_ = e;
    poisoned_.store(true, std::memory_order_release);
  }
  shm_->abort(kind, msg);
  if (cross_) cross_->abort(msg);
  if (world_) world_->abort(msg);
}

template <typename F>
void Communicator::run(F&& body) {
  if (poisoned_.load(std::memory_order_acquire)) {
    std::exception_ptr first;
    {
      std::lock_guard<std::mutex> lock(poison_mu_);
      first = failed_;
    }
    rethrow_after_failure(first);  // the same error if it lasts, else aborted
  }
  try {
    body();
  } catch (const Error&) {
    std::exception_ptr e = std::current_exception();
    if (id_.cross_size > 1) e = prefer_local_record(e);
    poison(e);
    std::rethrow_exception(e);
  }
}

// Across nodes a failure travels as closed connections: a rank whose TCP peer
// aborted learns "rank X closed", where X may only have relayed the news. If
// a local peer recorded the original cause in the segment (or does so
// shortly), report that instead, so that ranks agree on which rank was lost.
std::exception_ptr Communicator::prefer_local_record(std::exception_ptr e) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  while (!shm_->aborted() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  try {
    shm_->check_aborted();
  } catch (const Error&) { return std::current_exception(); }
  return e;
}

void Communicator::abort(const std::string& why) {
  poison(std::make_exception_ptr(AbortedError(why)));
}

void Communicator::allreduce(const void* send, void* recv, size_t count, tandem_dtype_t dtype,
                             tandem_op_t op, double prescale, double postscale) {
  check_reduction("allreduce", dtype, op, prescale, postscale);
  need_buffer("allreduce", "send", send, count);
  need_buffer("allreduce", "recv", recv, count);
  if (count == 0) return;
  if (op == TANDEM_ADASUM) {
    if (recv != send) std::memmove(recv, send, count * dtype_size(dtype));
    return adasum(recv, {count}, dtype, prescale, postscale);
  }
  Reduction r{dtype, op, prescale, true, postscale, id_.size};
  run([&] {
    if (id_.cross_size == 1) shm_->allreduce(send, recv, count, r);
    else hierarchical_allreduce(send, recv, count, r);
  });
}

void Communicator::allreduce_to(void* buf, size_t count, tandem_dtype_t dtype, tandem_op_t op,
                                double prescale, double postscale, const ResultSink& out,
                                const InputSource* source) {
  check_reduction("allreduce", dtype, op, prescale, postscale);
  need_buffer("allreduce", "buf", buf, count);
  if (!out) throw InvalidArgument("allreduce_to: no result sink given");
  if (count == 0) return;
  if (op == TANDEM_ADASUM) {
    if (source) copy_from_source(*source, 0, buf, count * dtype_size(dtype));
    adasum(buf, {count}, dtype, prescale, postscale);
    out(0, buf, count * dtype_size(dtype));
    return;
  }
  Reduction r{dtype, op, prescale, true, postscale, id_.size};
  run([&] {
    if (id_.cross_size == 1) shm_->allreduce(buf, buf, count, r, {}, &out, source);
    else hierarchical_allreduce(buf, buf, count, r, &out, source);
  });
}

void Communicator::hierarchical_allreduce(const void* send, void* recv, size_t count,
                                          const Reduction& r, const ResultSink* out,
                                          const InputSource* source) {
  if (uniform_ && shm_->local_size() == 1 && out == nullptr && source == nullptr) {
    // One rank per node: the node stage would only copy (in, once through
    // the reduction, out) and cut the transfer into chunk-sized round trips.
    // The cross-node transport reads send and writes recv directly instead.
    // (With a result sink or input source the node stage does that work.)
    tandem::allreduce(*cross_, send, recv, count, r, options_.allreduce_algorithm);
    return;
  }
  Reduction across = r;
  across.prescale = 1.0;  // applied once, inside the node
  if (uniform_) {
    shm_->allreduce(
        send, recv, count, r,
        [&](void* part, size_t n) {
          tandem::allreduce(*cross_, part, n, across, options_.allreduce_algorithm);
        },
        out, source);
    return;
  }
  if (source) copy_from_source(*source, 0, recv, count * dtype_size(r.dtype));  // recv == send
  Reduction node = r;
  node.finalize = false;
  shm_->allreduce(send, recv, count, node);
  if (id_.local_rank == 0)
    tandem::allreduce(*cross_, recv, count, across, options_.allreduce_algorithm);
  shm_->broadcast(recv, count * dtype_size(r.dtype), 0);
  if (out) (*out)(0, recv, count * dtype_size(r.dtype));
}

// Adasum runs over the transport joining every rank, inside a node too:
// its levels pair ranks across the whole group, which the node-then-nodes
// split of the other reductions would break (docs/runtime.md, Adasum).
void Communicator::adasum(void* buf, const std::vector<size_t>& counts, tandem_dtype_t dtype,
                          double prescale, double postscale) {
  check_reduction("allreduce", dtype, TANDEM_ADASUM, prescale, postscale);
  size_t count = 0;
  for (size_t c : counts) count += c;
  need_buffer("allreduce", "buf", buf, count);
  if (id_.size & (id_.size - 1))
    throw InvalidArgument("allreduce with Adasum: the job has " + std::to_string(id_.size) +
                          " ranks; Adasum combines ranks pairwise and needs a power of two "
                          "(1, 2, 4, 8, ...); run on such a number or use Average");
  if (count == 0) return;
  const void* in[1] = {buf};
  Reduction pre{dtype, TANDEM_SUM, prescale, false, 1.0, 1};
  Reduction post{dtype, TANDEM_SUM, 1.0, true, postscale, 1};
  run([&] {
    if (prescale != 1.0) reduce(buf, in, 1, count, pre);
    if (id_.size > 1) allreduce_adasum(world_transport(), buf, counts, dtype);
    if (postscale != 1.0) reduce(buf, in, 1, count, post);
  });
}

void Communicator::broadcast(void* buf, size_t count, tandem_dtype_t dtype, int root) {
  const size_t es = need_dtype("broadcast", dtype);
  need_buffer("broadcast", "buf", buf, count);
  if (root < 0 || root >= id_.size)
    throw InvalidArgument("broadcast: root " + std::to_string(root) +
                          " is out of range; expected 0.." + std::to_string(id_.size - 1));
  if (count == 0) return;
  run([&] {
    if (id_.cross_size == 1) shm_->broadcast(buf, count * es, root);
    else hierarchical_broadcast(buf, count * es, root);
  });
}

// Across nodes, shared memory inside them. Uniform layouts: the root's node
// shares the buffer over shm, then every local rank carries its slice of it
// across nodes over its own transport (all slices in parallel, like the
// allreduce), and the other nodes reassemble the slices with an shm
// allgather. Uneven layouts: the root's node shares it over shm, the local
// rank 0s (present on every node) broadcast it across nodes, and each other
// node shares it over shm.
void Communicator::hierarchical_broadcast(void* buf, size_t bytes, int root) {
  const int root_node = id_.node_of_rank.at(root);
  const auto& rn = nodes_.at(root_node);
  const int root_local = static_cast<int>(std::find(rn.begin(), rn.end(), root) - rn.begin());
  const bool root_here = id_.cross_rank == root_node;
  // The root node's rank in this rank's transport across nodes (used only
  // where that transport joins every node: the local rank 0s', or any local
  // rank's when the nodes are even).
  const int cross_root = static_cast<int>(
      std::find(cross_nodes_.begin(), cross_nodes_.end(), root_node) - cross_nodes_.begin());
  char* data = static_cast<char*>(buf);
  if (root_here) shm_->broadcast(buf, bytes, root_local);
  if (!uniform_) {
    if (id_.local_rank == 0) tandem::broadcast(*cross_, buf, bytes, cross_root);
    if (!root_here) shm_->broadcast(buf, bytes, 0);
    return;
  }
  // Slices in whole 64-byte lines, like the node stage of the allreduce.
  const int n = id_.local_size;
  const size_t per = ((bytes + n - 1) / n + 63) / 64 * 64;
  std::vector<size_t> slice(n);
  for (int j = 0; j < n; ++j) {
    const size_t lo = std::min(bytes, per * j);
    slice[j] = std::min(bytes, lo + per) - lo;
  }
  const size_t mine = std::min(bytes, per * id_.local_rank);
  if (slice[id_.local_rank])
    tandem::broadcast(*cross_, data + mine, slice[id_.local_rank], cross_root);
  if (!root_here) shm_->allgatherv(data + mine, data, slice);
}

void Communicator::allgather(const void* send, size_t count, void* recv, tandem_dtype_t dtype) {
  allgatherv(send, count, recv, std::vector<size_t>(id_.size, count), dtype);
}

void Communicator::allgatherv(const void* send, size_t send_count, void* recv,
                              const std::vector<size_t>& recv_counts, tandem_dtype_t dtype) {
  const size_t es = need_dtype("allgather", dtype);
  need_counts("allgather", "recv_counts", recv_counts, id_.size);
  if (send_count != recv_counts[id_.rank])
    throw InvalidArgument("allgatherv: send_count is " + std::to_string(send_count) +
                          " but recv_counts[" + std::to_string(id_.rank) + "] is " +
                          std::to_string(recv_counts[id_.rank]) + "; they must be equal");
  need_buffer("allgather", "send", send, send_count);
  need_buffer("allgather", "recv", recv, sum(recv_counts));
  if (sum(recv_counts) == 0) return;
  run([&] {
    if (id_.cross_size == 1) shm_->allgatherv(send, recv, scaled(recv_counts, es));
    else hierarchical_allgatherv(send, recv, scaled(recv_counts, es));
  });
}

// The node gathers its ranks' blocks over shm into its node block, the local
// rank 0s exchange node blocks across nodes, and each node shares the other
// nodes' blocks over shm. The blocks travel node by node, the nodes in the
// order of the local rank 0s' transport (leader_nodes_), each node's ranks
// ascending; when the world's rank order differs (cyclic or arbitrary
// placement) they are gathered in a scratch buffer and put in rank order at
// the end.
void Communicator::hierarchical_allgatherv(const void* send, void* recv,
                                           const std::vector<size_t>& bytes) {
  std::vector<size_t> world_at(id_.size, 0);
  for (int r = 1; r < id_.size; ++r) world_at[r] = world_at[r - 1] + bytes[r - 1];
  const size_t total = world_at.back() + bytes.back();
  bool node_major = true;  // world order == node-major order
  std::vector<size_t> at(id_.size), node_bytes(nodes_.size(), 0), node_at(nodes_.size(), 0);
  size_t pos = 0;
  for (int k : leader_nodes_) {
    node_at[k] = pos;
    for (int r : nodes_[k]) {
      at[r] = pos;
      node_major = node_major && pos == world_at[r];
      pos += bytes[r];
      node_bytes[k] += bytes[r];
    }
  }
  std::vector<char> scratch(node_major ? 0 : total);
  char* out = node_major ? static_cast<char*>(recv) : scratch.data();
  const int me = id_.cross_rank;
  std::vector<size_t> local(nodes_[me].size());
  for (size_t j = 0; j < local.size(); ++j) local[j] = bytes[nodes_[me][j]];
  shm_->allgatherv(send, out + node_at[me], local);
  if (id_.local_rank == 0) {
    std::vector<size_t> in_order;  // the blocks as the leaders' transport numbers them
    for (int k : leader_nodes_) in_order.push_back(node_bytes[k]);
    tandem::allgatherv(*cross_, out + node_at[me], out, in_order);
  }
  // This node's block is everywhere already: share what lies before and after.
  if (node_at[me] > 0) shm_->broadcast(out, node_at[me], 0);
  const size_t after = node_at[me] + node_bytes[me];
  if (total > after) shm_->broadcast(out + after, total - after, 0);
  if (!node_major) {
    char* dst = static_cast<char*>(recv);
    for (int r = 0; r < id_.size; ++r)
      if (bytes[r]) std::memcpy(dst + world_at[r], out + at[r], bytes[r]);
  }
}

void Communicator::alltoall(const void* send, void* recv, size_t count, tandem_dtype_t dtype) {
  const std::vector<size_t> counts(id_.size, count);
  alltoallv(send, counts, recv, counts, dtype);
}

void Communicator::alltoallv(const void* send, const std::vector<size_t>& send_counts, void* recv,
                             const std::vector<size_t>& recv_counts, tandem_dtype_t dtype) {
  const size_t es = need_dtype("alltoall", dtype);
  need_counts("alltoall", "send_counts", send_counts, id_.size);
  need_counts("alltoall", "recv_counts", recv_counts, id_.size);
  if (send_counts[id_.rank] != recv_counts[id_.rank])
    throw InvalidArgument("alltoallv: this rank sends " + std::to_string(send_counts[id_.rank]) +
                          " elements to itself but receives " +
                          std::to_string(recv_counts[id_.rank]));
  need_buffer("alltoall", "send", send, sum(send_counts));
  need_buffer("alltoall", "recv", recv, sum(recv_counts));
  if (send == recv && sum(send_counts) > 0)
    throw InvalidArgument("alltoall: send and recv must be different buffers");
  run([&] {
    if (id_.cross_size == 1)
      shm_->alltoallv(send, scaled(send_counts, es), recv, scaled(recv_counts, es));
    else
      tandem::alltoallv(world_transport(), send, scaled(send_counts, es), recv,
                        scaled(recv_counts, es));
  });
}

void Communicator::reducescatter(const void* send, void* recv,
                                 const std::vector<size_t>& recv_counts, tandem_dtype_t dtype,
                                 tandem_op_t op, double prescale, double postscale) {
  check_reduction("reducescatter", dtype, op, prescale, postscale);
  if (op == TANDEM_ADASUM)
    throw InvalidArgument(
        "reducescatter: Adasum combines whole tensors and has no "
        "reduce-scatter; use Sum or Average");
  need_counts("reducescatter", "recv_counts", recv_counts, id_.size);
  need_buffer("reducescatter", "send", send, sum(recv_counts));
  need_buffer("reducescatter", "recv", recv, recv_counts[id_.rank]);
  if (sum(recv_counts) == 0) return;
  Reduction r{dtype, op, prescale, true, postscale, id_.size};
  run([&] {
    if (id_.cross_size == 1) shm_->reducescatter(send, recv, recv_counts, r);
    else tandem::reducescatter(world_transport(), send, recv, recv_counts, r);
  });
}

void Communicator::barrier() {
  run([&] {
    shm_->barrier();
    if (id_.cross_size > 1) {
      if (id_.local_rank == 0) tandem::barrier(*cross_);
      shm_->barrier();
    }
  });
}

Doorbell& Communicator::doorbell() { return shm_->doorbell(); }

void* Communicator::allocate_shared(size_t bytes) { return shm_->allocate(bytes); }
void Communicator::free_shared(void* p) { shm_->free(p); }
bool Communicator::is_shared(const void* p, size_t bytes) const { return shm_->in_arena(p, bytes); }
bool Communicator::shm_single_copy() const { return shm_->single_copy(); }

}  // namespace tandem
