// The local ranks of one node and their shared segment: node-local
// collectives that read peers' data where it lies, and an allocator for
// buffers that live in the segment (so the runtime can fuse tensors there and
// skip the copy-in).
//
// Segment layout (offsets from the base, every region page aligned):
//   control block                    (control.h)
//   staging[r][0..1]   staging bytes  per local rank, double-buffered
//   arena[r]           arena bytes    per local rank, Communicator::allocate_shared
// A staging buffer has room for the largest step of the staged allreduce
// (max(chunk, max chunk)) but only chunk bytes of it are backed by memory at
// setup; the rest when the node first takes larger steps.
//
// Every collective is a pipeline of steps over chunks of at most chunk_bytes
// per rank (the staged allreduce: of the node's current step, decide_step). A step writes into this
// rank's staging buffer of parity (step & 1), passes a barrier, then reads peers' buffers of that
// parity. Because the step counter is global to the group and every step starts with a barrier, a
// buffer is only rewritten two steps later, after every reader has passed the barrier that follows
// its reads: one or two barriers per step, never a per-message handshake.
#pragma once

#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "common/reduce.h"
#include "common/input_source.h"
#include "shm/doorbell.h"
#include "shm/node_sync.h"
#include "shm/path_choice.h"
#include "shm/segment.h"
#include "shm/shm_settings.h"

namespace tandem {

// Which allreduce algorithm runs above the one-barrier size: by size and
// rank count (kAuto), or one of them for every size (tests compare them;
// kDirect needs single copy to work on the node, else it stages).
enum class ShmAllreducePath { kAuto, kStaged, kDirect };

// The staged allreduce's step from what a barrier costs: the smallest
// power-of-two multiple of `base`, at most `most`, at which a step's two
// barriers (barrier_ns each) cost at most an eighth of the step's own work
// (work_ns_per_byte per byte per rank). Cheap barriers (ranks spinning on
// CPUs of their own: well under a microsecond) keep `base`, whose steps stay
// in cache; barriers that hand the CPU to other work for a scheduler slice
// each (more ranks than CPUs, beside busy threads) take few large steps.
size_t staged_step(size_t base, size_t most, double barrier_ns, double work_ns_per_byte);

// How far the node goes towards staged_step's `want` from its `current`
// step (both base << k, k = 0, 1, ...; the largest may be cut at `most`):
// one doubling per decision, so that each step is measured before the next,
// and never up to a step whose calls took longer per byte than the one
// below it (wall_ns_per_byte by k; 0: not measured); back down one where the
// step below was measured faster. What staged_step cannot see: a larger
// step's working set (local ranks x step, twice) falls out of cache, and
// whether that costs or pays depends on the load: with 4 ranks on 2 CPUs
// of 1 MiB L2 each, 4 MiB steps were the slower ones on an idle host and
// the faster ones beside busy loops (docs/engine.md, "Step size").
size_t climb_step(size_t base, size_t most, size_t current, size_t want,
                  const double* wall_ns_per_byte);
constexpr int kStepClasses = 16;

struct ShmOptions {
  std::chrono::milliseconds timeout{300000};
  size_t chunk_bytes = kShmChunkDefault;
  // The staged allreduce's largest step (TANDEM_SHM_MAX_CHUNK_BYTES): where
  // barriers are dear (more ranks than CPUs, busy loops beside them) fewer,
  // larger steps win, up to this one (docs/engine.md, "Step size"). At most
  // chunk_bytes: fixed steps.
  size_t max_chunk_bytes = size_t{4} << 20;
  size_t arena_bytes = size_t{64} << 20;
  int spin_us = 50;
  bool stats = false;  // TANDEM_SHM_STATS
  // TANDEM_SHM_CMA: single-copy access to peers' buffers (process_vm_readv):
  // 0 never, 1 where it works, in the size classes where the node's own
  // calls show it faster than staging (shm/path_choice.h), 2 where it works,
  // in fixed size ranges (ShmGroup::takes_direct).
  int cma = 1;
  ShmAllreducePath allreduce_path = ShmAllreducePath::kAuto;  // tests only
  // Tests only: how often (in staged allreduces of at least four base
  // steps) every rank times one extra barrier for decide_step, and what
  // local rank 0 makes of it instead of staged_step (the others take the
  // step it publishes, so only its rule matters).
  int probe_every = 8;
  std::function<size_t(double barrier_ns, double work_ns_per_byte)> step_rule;
};

class ShmGroup {
 public:
  // Collective over the whole world (it uses the bootstrap's allgather and
  // barrier): every rank calls it, each joins the group of its node.
  ShmGroup(Bootstrap& bootstrap, const ShmOptions& options);
  ~ShmGroup();

  int local_rank() const { return me_; }
  int local_size() const { return n_; }
  size_t chunk_bytes() const { return chunk_; }
  // The step per rank the next staged allreduce without a part hook takes
  // (the same on every local rank between collectives).
  size_t staged_step_bytes() const;
  // Whether this node may read and write peers' private buffers directly
  // (shm/peer_memory.h); the same on every local rank.
  bool single_copy() const { return cma_; }
  // Whether it does so by size class as timing shows it faster
  // (TANDEM_SHM_CMA=1), rather than in fixed size ranges.
  bool single_copy_timed() const { return choosing_; }
  // Whether this rank's last allreduce took the direct path (tests check
  // that every local rank took the same one in every call).
  bool last_allreduce_direct() const { return last_direct_; }

  // Called after this rank reduced its part of a step, with that part (in
  // place); the hierarchical allreduce reduces it across nodes here.
  using PartHook = std::function<void(void* part, size_t count)>;
  // Where an allreduce's result goes instead of recv: called with pieces of
  // the result (byte offset in it, the bytes, their length), every byte
  // exactly once, in increasing offset order. The runtime unpacks a fused
  // buffer straight into the tensors this way, saving a pass over memory.
  using ResultSink = std::function<void(size_t offset, const void* data, size_t bytes)>;
  // Where the input is when it is not in the buffer yet (common/input_source.h).
  // The runtime passes its tensors this way: the allreduce copies into the
  // staging buffers only the parts peers read, step by step, and reduces
  // this rank's own parts straight from the tensors.
  using InputSource = tandem::InputSource;

  // The collectives below are called by every local rank, in the same order.
  // recv may equal send (in place); other overlaps are not allowed.
  // With a hook, r.finalize is the hook's business: the node stage only
  // combines (and prescales).
  // With a sink the result goes there and recv is scratch (its content is
  // undefined afterwards). In place on a buffer in this rank's arena (every
  // local rank's, see allreduce_in_arena) it takes fewer barriers.
  // With a source, send must equal recv and the input is read from the
  // source (send's content on entry does not matter).
  void allreduce(const void* send, void* recv, size_t count, const Reduction& r,
                 const PartHook& hook = {}, const ResultSink* sink = nullptr,
                 const InputSource* source = nullptr);
  void broadcast(void* buf, size_t bytes, int root);
  // bytes[j] from local rank j, packed in local rank order into recv.
  void allgatherv(const void* send, void* recv, const std::vector<size_t>& bytes);
  // send_bytes[j] to local rank j, recv_bytes[j] from it, packed in order.
  void alltoallv(const void* send, const std::vector<size_t>& send_bytes, void* recv,
                 const std::vector<size_t>& recv_bytes);
  // counts[j] elements of the reduced send go to local rank j.
  void reducescatter(const void* send, void* recv, const std::vector<size_t>& counts,
                     const Reduction& r);
  void barrier();

  // Buffers in this rank's arena of the segment (page aligned). Inputs that
  // lie there are read by peers in place. Thread-safe.
  void* allocate(size_t bytes);
  void free(void* p);
  bool in_arena(const void* p, size_t bytes) const;

  // Round wake-ups among the local ranks (shm/doorbell.h), for the runtime.
  Doorbell& doorbell() { return *doorbell_; }

  // Fails every local rank's current and next operations with `kind`.
  void abort(AbortKind kind, const std::string& message) { sync_->abort(kind, message); }
  // Throws the failure a local rank recorded, if any.
  void check_aborted() const { sync_->check_aborted(); }
  bool aborted() const { return sync_->aborted(); }

 private:
  void allreduce_small(const void* send, void* recv, size_t count, const Reduction& r,
                       const ResultSink* sink);
  void allreduce_staged(const void* send, void* recv, size_t count, const Reduction& r,
                        const PartHook& hook, const ResultSink* sink, const InputSource* source);
  void allreduce_direct(const void* send, void* recv, size_t count, const Reduction& r,
                        const ResultSink* sink, const InputSource* source);
  void probe_single_copy();
  // Whether an allreduce of `bytes` without a hook takes the direct path.
  bool takes_direct(size_t bytes) const;
  // Local rank 0, after an allreduce's first barrier: the last timed call
  // into the chooser and its choices into the segment (shm/path_choice.h).
  void publish_choice();
  // Where peer k's buffer at address `addr` (segment offset `off`, or
  // kNotInSegment) lies for a direct access; null when only CMA reaches it.
  char* mapped(uint64_t off) const { return off == kNotInSegment ? nullptr : seg_.base() + off; }
  uint64_t segment_offset(const void* p, size_t bytes) const {
    return in_arena(p, bytes) ? offset_of(p) : kNotInSegment;
  }
  [[noreturn]] void cma_failed(const char* what, int k, int err, const char* verb);
  void allreduce_in_arena(char* buf, size_t count, size_t step_elems, const Reduction& r,
                          const PartHook& hook, const ResultSink* sink, int parity);
  // The staged allreduce's step choice: every rank times a barrier now and
  // then (probe_barrier), local rank 0 turns the slowest rank's times and
  // its own work per byte into the next step (decide_step).
  void probe_barrier();
  void decide_step();
  void account_staged(size_t bytes, std::chrono::steady_clock::time_point t0, uint64_t wait0,
                      bool timed);
  size_t arena_base() const {
    return control_bytes_ + static_cast<size_t>(n_) * 2 * staging_bytes_;
  }
  // Reduces bytes [from, to) of the input into out: this rank's input from
  // the source, peer j's from in[j] (which points at byte `from`).
  void reduce_from_source(const InputSource& source, size_t from, size_t to, char* out,
                          const void** in, const Reduction& r) const;
  char* staging(int rank, int parity) const;
  size_t offset_of(const void* p) const {
    return static_cast<size_t>(static_cast<const char*>(p) - seg_.base());
  }
  ControlBlock* control() const { return reinterpret_cast<ControlBlock*>(seg_.base()); }
  int next_parity() { return static_cast<int>(step_++ & 1); }

  int me_ = 0;
  int n_ = 1;
  size_t chunk_ = 0;
  size_t staging_bytes_ = 0;  // room per staging buffer: the largest step
  size_t arena_ = 0;
  size_t control_bytes_ = 0;
  SharedSegment seg_;
  std::unique_ptr<NodeSync> sync_;
  std::unique_ptr<Doorbell> doorbell_;
  uint64_t step_ = 0;
  bool cma_ = false;
  bool choosing_ = false;  // TANDEM_SHM_CMA=1: the path by size class, timed
  ShmAllreducePath path_ = ShmAllreducePath::kAuto;
  // The direct allreduce's landing space for peers' pieces: one piece per
  // peer, page aligned.
  struct FreeDeleter {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, FreeDeleter> scratch_;

  // The staged allreduce's step (see staged_step). Every rank counts the
  // staged allreduces without a hook alike, so all time the same barriers.
  bool adaptive_step_ = true;
  int probe_every_ = 8;
  std::function<size_t(double, double)> step_rule_;
  uint64_t staged_calls_ = 0;
  uint64_t probes_ = 0;
  size_t last_step_ = 0;      // for TANDEM_SHM_STATS
  bool last_direct_ = false;  // for TANDEM_SHM_STATS and tests
  // Local rank 0 only.
  size_t backed_step_ = 0;  // bytes of every staging buffer backed by memory
  bool backing_failed_ = false;
  uint64_t probes_seen_ = 0;             // probes whose results decide_step has read
  double probe_ns_[3] = {0, 0, 0};       // the node's last probes (slowest rank each)
  double work_ns_ = 0, work_bytes_ = 0;  // staged work outside waits since the last decision
  double work_ns_per_byte_ = 0;
  // Wall time per byte of whole staged calls of 4+ base steps, by step
  // class (climb_step), since the last decision and smoothed over them.
  double wall_ns_ = 0, wall_bytes_ = 0;
  double wall_ns_per_byte_[kStepClasses] = {};
  uint64_t decisions_ = 0;
  // The path choice (shm/path_choice.h) and its last call not yet recorded.
  std::unique_ptr<PathChooser> chooser_;
  struct TimedCall {
    int size_class = -1;  // -1: none
    bool direct = false;
    double ns_per_byte = 0;
  } pending_;

  // TANDEM_SHM_STATS: node-local collectives, their time and the context
  // switches of the calling thread during them (getrusage per call).
  // Kept per power-of-two size class of the collective.
  struct OpStats {
    uint64_t ops = 0, ns = 0, cpu_ns = 0, bytes = 0;
    uint64_t step = 0;    // the staged allreduce's step in the last such call
    uint64_t direct = 0;  // calls that took the direct path
    int64_t nvcsw = 0, nivcsw = 0;
    WaitStats waits;
  };
  class OpTimer;
  bool stats_ = false;
  OpStats op_stats_[64];

  std::mutex alloc_mu_;
  std::map<size_t, size_t> free_;  // arena offset -> bytes
  std::map<size_t, size_t> used_;
};

}  // namespace tandem
