// A Communicator is one process's membership in a job's collectives: its
// identity (bootstrap), the shared-memory group of its node and, when the job
// spans nodes, point-to-point transports to the other nodes. It is what the C
// API and the runtime call; it picks the algorithm:
//   - one node: everything over shared memory (shm/);
//   - several nodes, allreduce: hierarchical. Inside a node each local rank
//     reduces its part of every pipeline step over shared memory, allreduces
//     that part across nodes over its own transport (all local ranks in
//     parallel, one transport per local rank), and the node shares the
//     parts. With an uneven layout (3+1) the local rank 0s carry the whole
//     buffer between nodes instead;
//   - several nodes, other collectives: over a transport joining every rank
//     (made on first use, its connections too), barrier through the node
//     leaders.
// A transport across nodes connects at set-up only the peers the algorithms
// exchange with (collectives/partners.h): O(log n) sockets per rank.
// Results are bitwise identical on every rank and reproducible for a layout.
//
// Collectives are called by every rank in the same order, one at a time per
// Communicator (the C API serialises its callers). After any failure (peer
// lost, timeout) the Communicator is poisoned: every later call fails (with
// the first error when it lasts, a lost peer or a timeout; else with
// AbortedError and its message: common/errors.h), and local peers and
// transports are aborted so that nobody waits for this rank.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "collectives/allreduce_algorithms.h"
#include "common/reduce.h"
#include "common/input_source.h"
#include "common/log.h"
#include "shm/shm_settings.h"
#include "transport/transport.h"

namespace tandem {

class Doorbell;
class ShmGroup;

// Makes a Transport for `members` (world ranks, ascending, including this
// one); collective over the world like connect_tcp(). `planned`: the group
// indices this rank connects during set-up (collectives/partners.h); any
// other peer is connected on first use. Transports without connections
// (the memory transport) ignore it.
using TransportFactory = std::function<std::unique_ptr<Transport>(
    Bootstrap&, const std::vector<int>& members, std::chrono::milliseconds timeout,
    const std::vector<int>& planned)>;

struct CommunicatorOptions {
  std::chrono::milliseconds timeout{300000};     // TANDEM_TIMEOUT
  size_t shm_chunk_bytes = kShmChunkDefault;     // TANDEM_SHM_CHUNK_BYTES
  size_t shm_max_chunk_bytes = size_t{4} << 20;  // TANDEM_SHM_MAX_CHUNK_BYTES
  size_t shm_arena_bytes = size_t{64} << 20;     // TANDEM_SHM_ARENA_BYTES
  int shm_spin_us = 50;                          // TANDEM_SHM_SPIN_US
  bool shm_stats = false;                        // TANDEM_SHM_STATS
  int shm_cma = 1;                               // TANDEM_SHM_CMA: 0, 1 (measured), 2
  // Tests: force one node-local allreduce algorithm (shm/shm_group.h).
  int shm_allreduce_path = 0;  // 0 auto, 1 staged, 2 direct
  // Connect the transport joining every rank in the constructor rather than
  // on first use, so that the bootstrap is never used after construction
  // (a process set's bootstrap only works while the whole world takes part:
  // bootstrap/subset_bootstrap.h).
  bool connect_world_at_start = false;
  // Across nodes (collectives/allreduce_algorithms.h): TANDEM_ALLREDUCE_ALGORITHM.
  AllreduceAlgorithm allreduce_algorithm = AllreduceAlgorithm::kAuto;
  // The level of the lines describing the set-up (layout, shared memory,
  // transport, algorithm): info for the C API's world, debug for the
  // runtime's and process sets' own Communicators over the same job.
  log::Level setup_log_level = log::Level::kDebug;
  // Reads the variables above (common/settings.h, shm/shm_settings.h);
  // throws InvalidArgument naming a malformed one.
  static CommunicatorOptions from_environment();
};

class Communicator {
 public:
  // Collective over the world. `connect` may be empty for a one-node job.
  Communicator(std::unique_ptr<Bootstrap> bootstrap, TransportFactory connect,
               const CommunicatorOptions& options);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  const Identity& identity() const { return id_; }
  // The bootstrap this Communicator was built on, for building others over
  // the same job (the runtime's own, process sets). Not thread-safe against
  // this Communicator's first use of a transport joining every rank.
  Bootstrap& bootstrap() { return *bootstrap_; }

  // Argument errors throw InvalidArgument before anything is sent (the
  // Communicator stays usable). Counts are elements. recv == send is in place.
  void allreduce(const void* send, void* recv, size_t count, tandem_dtype_t dtype, tandem_op_t op,
                 double prescale = 1.0, double postscale = 1.0);
  // As allreduce in place on buf, except that the result is handed to `out`
  // in pieces (byte offset in the result, the bytes, their length; every
  // byte once, in increasing offset order) instead of being written to buf,
  // whose content is undefined afterwards. The runtime unpacks a fused buffer
  // straight into the tensors this way: one pass over memory fewer.
  // With a source (shm/shm_group.h: a pointer to the input at a byte offset
  // and how many bytes lie there in a row) buf's content on entry does not
  // matter: the input is copied in only where peers read it in place, and
  // this rank's own parts are reduced straight from the source.
  using ResultSink = std::function<void(size_t offset, const void* data, size_t bytes)>;
  using InputSource = tandem::InputSource;
  void allreduce_to(void* buf, size_t count, tandem_dtype_t dtype, tandem_op_t op, double prescale,
                    double postscale, const ResultSink& out, const InputSource* source = nullptr);
  // Adasum in place (collectives.h: allreduce_adasum) over every rank: buf
  // packs tensors of counts[k] elements, each with its own coefficients;
  // prescale before, postscale after. allreduce with TANDEM_ADASUM is this
  // with one tensor.
  void adasum(void* buf, const std::vector<size_t>& counts, tandem_dtype_t dtype,
              double prescale = 1.0, double postscale = 1.0);
  void broadcast(void* buf, size_t count, tandem_dtype_t dtype, int root);
  void allgather(const void* send, size_t count, void* recv, tandem_dtype_t dtype);
  // recv_counts has size() entries; send_count must be recv_counts[rank].
  void allgatherv(const void* send, size_t send_count, void* recv,
                  const std::vector<size_t>& recv_counts, tandem_dtype_t dtype);
  void alltoall(const void* send, void* recv, size_t count, tandem_dtype_t dtype);
  void alltoallv(const void* send, const std::vector<size_t>& send_counts, void* recv,
                 const std::vector<size_t>& recv_counts, tandem_dtype_t dtype);
  void reducescatter(const void* send, void* recv, const std::vector<size_t>& recv_counts,
                     tandem_dtype_t dtype, tandem_op_t op, double prescale = 1.0,
                     double postscale = 1.0);
  void barrier();

  // Buffers in this node's shared segment (page aligned, at most
  // TANDEM_SHM_ARENA_BYTES in all per rank). An allreduce whose send buffer
  // lies in one is read by the local peers in place: no copy-in. Thread-safe.
  void* allocate_shared(size_t bytes);
  void free_shared(void* p);
  bool is_shared(const void* p, size_t bytes) const;
  // Whether this node's ranks read and write each other's private buffers
  // with single copies (shm/peer_memory.h); false when refused or off.
  bool shm_single_copy() const;

  // Round wake-ups among this node's ranks (shm/doorbell.h). They reach
  // every rank only when the job lies on one node; across nodes a
  // tcp::WakeRelay carries them (the runtime's data path sets one up).
  Doorbell& doorbell();

  // Fails this rank's and its peers' current and later collectives.
  void abort(const std::string& why);

  // The traffic of this rank's transports across nodes so far (transport.h).
  // Safe from any thread.
  Transport::Traffic traffic() const;

 private:
  template <typename F>
  void run(F&& body);
  void poison(const std::exception_ptr& e);
  std::exception_ptr prefer_local_record(std::exception_ptr e);
  Transport& world_transport();
  void hierarchical_allreduce(const void* send, void* recv, size_t count, const Reduction& r,
                              const ResultSink* out = nullptr, const InputSource* source = nullptr);
  void hierarchical_broadcast(void* buf, size_t bytes, int root);
  void hierarchical_allgatherv(const void* send, void* recv, const std::vector<size_t>& bytes);
  void log_setup() const;

  std::unique_ptr<Bootstrap> bootstrap_;
  TransportFactory connect_;
  CommunicatorOptions options_;
  Identity id_;
  std::unique_ptr<ShmGroup> shm_;
  bool uniform_ = true;                          // every node has the same number of ranks
  std::vector<std::vector<int>> nodes_;          // world ranks of each node, ascending
  std::unique_ptr<Transport> cross_;             // same local rank on every node
  std::unique_ptr<Bootstrap> node_bootstrap_;    // one node: world_'s set-up (node_bootstrap.h)
  std::vector<int> cross_nodes_;                 // node of each of cross_'s ranks, in its order
  std::vector<int> leader_nodes_;                // the same for the local rank 0s' cross_
  std::unique_ptr<Transport> world_;             // every rank, on first use
  std::atomic<Transport*> world_seen_{nullptr};  // world_, for traffic() from other threads
  std::mutex poison_mu_;
  std::exception_ptr failed_;
  std::atomic<bool> poisoned_{false};  // failed_ is set: every call checks this, not the mutex
};

}  // namespace tandem
