#include "shm/shm_group.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <random>
#include <sys/resource.h>

#include "bootstrap/node_domain.h"
#include "common/errors.h"
#include "common/log.h"
#include "shm/peer_memory.h"
#include "shm/stream_copy.h"

namespace tandem {
namespace {

constexpr size_t kPage = 4096;
// Up to this many bytes an allreduce takes the one-barrier path.
constexpr size_t kSmallBytes = 4096;
// Where the direct allreduce (single copy) beat staging, measured on a
// 2-core VM under load (docs/engine.md, "Single copy"): the fixed ranges of
// TANDEM_SHM_CMA=2, and where TANDEM_SHM_CMA=1 starts before it has timed
// both paths (shm/path_choice.h). CPU time per call is what counts
// when the CPUs are shared, and the kernel copy costs more per byte than
// a memcpy once the data is out of cache, while every step of the
// staged path costs two barriers. Two ranks: from just above the
// one-barrier size to 4 MiB. More ranks (a kernel copy per peer and
// piece): 256 KiB to 1 MiB.
constexpr size_t kDirectMaxTwo = size_t{4} << 20;
constexpr size_t kDirectMinMany = size_t{256} << 10;
constexpr size_t kDirectMaxMany = size_t{1} << 20;
// The direct allreduce reduces its part in pieces of this many bytes per
// peer: each peer's piece is read into scratch (one kernel copy), reduced
// with this rank's own, and the result written to every peer, while the
// piece is still in cache.
constexpr size_t kDirectPieceBytes = size_t{128} << 10;

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

bool direct_by_size(int n, size_t bytes) {
  if (n == 2) return bytes <= kDirectMaxTwo;
  return bytes >= kDirectMinMany && bytes <= kDirectMaxMany;
}

// The fixed ranges as size classes (bit k: 2^k bytes are in them).
uint64_t direct_classes_by_size(int n) {
  uint64_t bits = 0;
  for (int k = 0; k < PathChooser::kClasses; ++k)
    if (direct_by_size(n, size_t{1} << k)) bits |= uint64_t{1} << k;
  return bits;
}

// Part j of m elements split among n ranks, in whole 64-byte lines where the
// element size allows, so that no two ranks write the same cache line.
void split(size_t m, int n, int j, size_t es, size_t* lo, size_t* hi) {
  const size_t unit = es >= 64 ? 1 : 64 / es;
  const size_t per = round_up((m + n - 1) / n, unit);
  *lo = std::min(m, per * static_cast<size_t>(j));
  *hi = std::min(m, *lo + per);
}

// What the node's first local rank tells the others about the segment; in
// the first round every rank's proposal, with what it shares memory through
// (bootstrap/node_domain.h).
struct SegmentInfo {
  std::string name;
  size_t chunk = 0;
  size_t arena = 0;
  size_t most = 0;  // the largest staged allreduce step
  std::string domain = "-";
};

Bytes encode(const SegmentInfo& s) {
  std::ostringstream o;
  o << s.chunk << ' ' << s.arena << ' ' << s.most << ' ' << s.domain << ' ' << s.name;
  const std::string t = o.str();
  return Bytes(t.begin(), t.end());
}

SegmentInfo decode(const Bytes& b) {
  std::istringstream i(std::string(b.begin(), b.end()));
  SegmentInfo s;
  i >> s.chunk >> s.arena >> s.most >> s.domain >> s.name;
  if (!i && !i.eof()) throw BootstrapError("shared memory setup: malformed segment description");
  return s;
}

std::string domain_part(const std::string& domain, const char* key) {
  const std::string k = std::string(key) + "=";
  size_t at = domain.find(k);
  if (at == std::string::npos) return "";
  at += k.size();
  return domain.substr(at, domain.find(',', at) - at);
}

// Every rank sees every proposal, so every rank finds the same first pair of
// ranks of one node that cannot share memory, and all of them stop with the
// same message instead of some waiting for a segment others cannot open.
void check_node_domains(const Identity& id, const std::vector<Bytes>& proposals) {
  std::map<int, int> first_of_node;
  for (int r = 0; r < id.size; ++r) {
    const int node = id.node_of_rank.empty() ? 0 : id.node_of_rank.at(r);
    auto it = first_of_node.emplace(node, r).first;
    const int a = it->second;
    const std::string da = decode(proposals.at(a)).domain, db = decode(proposals.at(r)).domain;
    if (da == db) continue;
    const bool shm = domain_part(da, "shm") != domain_part(db, "shm");
    throw UnsupportedError(
        "ranks " + std::to_string(a) + " and " + std::to_string(r) + " are on one node (" +
        std::to_string(node) + ") but " +
        (shm ? "do not see the same /dev/shm (the container runtime gave each its own)"
             : "are in different PID namespaces (the container runtime gave each its own)") +
        ": the node-local transport needs the node's ranks to share the host's /dev/shm and PID "
        "namespace. Run the containers with them (podman: --ipc=host --pid=host, or "
        "ipcns/pidns = \"host\" in containers.conf; docs/containers.md), or bootstrap over TCP "
        "(TANDEM_BOOTSTRAP=tcp under srun --horovod), where such ranks talk over TCP instead");
  }
}

}  // namespace

ShmGroup::ShmGroup(Bootstrap& bootstrap, const ShmOptions& options) {
  const Identity& id = bootstrap.identity();
  std::vector<int> locals;
  for (int r = 0; r < id.size; ++r) {
    const int node = id.node_of_rank.empty() ? 0 : id.node_of_rank.at(r);
    if (node == (id.node_of_rank.empty() ? 0 : id.cross_rank)) locals.push_back(r);
  }
  n_ = static_cast<int>(locals.size());
  me_ = static_cast<int>(std::find(locals.begin(), locals.end(), id.rank) - locals.begin());
  if (me_ != id.local_rank || n_ != id.local_size || n_ > kMaxLocalRanks)
    throw BootstrapError("shared memory setup: rank " + std::to_string(id.rank) +
                         " has local rank " + std::to_string(id.local_rank) + " of " +
                         std::to_string(id.local_size) + " but its node holds " +
                         std::to_string(n_) + " ranks (at most " + std::to_string(kMaxLocalRanks) +
                         "); the launcher's layout is inconsistent");

  // Every rank proposes its settings; world rank 0's chunk sizes win
  // everywhere (the hierarchical allreduce needs the same steps on every
  // node), the node leader's arena size wins in the node.
  SegmentInfo mine{"", round_up(std::max<size_t>(options.chunk_bytes, kPage), kPage),
                   round_up(options.arena_bytes, kPage),
                   round_up(std::max<size_t>(options.max_chunk_bytes, kPage), kPage),
                   node_local_domain()};
  control_bytes_ = round_up(sizeof(ControlBlock), kPage);
  auto total = [&](const SegmentInfo& s) {
    return control_bytes_ + static_cast<size_t>(n_) * (2 * std::max(s.chunk, s.most) + s.arena);
  };
  // Two rounds: first agree on the sizes, then the leader creates.
  auto proposals = bootstrap.allgather(encode(mine), options.timeout);
  check_node_domains(id, proposals);
  const SegmentInfo world0 = decode(proposals.at(0));
  const SegmentInfo leader = decode(proposals.at(locals[0]));
  chunk_ = world0.chunk;
  staging_bytes_ = std::max(chunk_, world0.most);
  arena_ = leader.arena;
  SegmentInfo info{"", chunk_, arena_, world0.most};
  // The name lives in /dev/shm only from its creation to the last local
  // rank's open; a rank that fails in between removes it on its way out
  // (segment.h). A job killed as a whole in between leaves it: such names
  // are removed here, by the next setup on the node (segment.h says why
  // that is safe).
  if (me_ == 0) {
    for (const std::string& stale : remove_stale_segments())
      TANDEM_INFO(shm, "removed /dev/shm/%s: a segment whose creator exited during its setup",
                  stale.c_str());
    info.name = make_segment_name(id.job_id);
    seg_ = SharedSegment::create(info.name, total(info), control_bytes_);
    if (n_ == 1) seg_.unlink();  // nobody else opens it (a node per rank)
    for (int r = 0; r < n_; ++r)
      for (int b = 0; b < 2; ++b) seg_.back(offset_of(staging(r, b)), chunk_);
    backed_step_ = chunk_;
    ControlBlock* c = control();
    c->magic = kControlMagic;
    c->local_size = static_cast<uint32_t>(n_);
    c->chunk_bytes = chunk_;
    c->arena_bytes = arena_;
    c->step_bytes.store(chunk_);
    c->direct_classes.store(direct_classes_by_size(n_));
  }
  auto names = bootstrap.allgather(me_ == 0 ? encode(info) : Bytes{}, options.timeout);
  if (me_ != 0) {
    info = decode(names.at(locals[0]));
    seg_ = SharedSegment::open(info.name, total(info));
    if (control()->magic != kControlMagic || control()->local_size != static_cast<uint32_t>(n_))
      throw BootstrapError("shared segment " + info.name + " was not set up for " +
                           std::to_string(n_) + " local ranks");
    if (control()->opened.fetch_add(1) + 2 == static_cast<uint32_t>(n_)) seg_.unlink();
  }
  sync_ = std::make_unique<NodeSync>(control(), me_, locals, options.timeout, options.spin_us);
  stats_ = options.stats;
  path_ = options.allreduce_path;
  // One local rank has no barrier to amortize: the step stays the base, and
  // no timing (a preempted probe) can move it.
  adaptive_step_ = staging_bytes_ > chunk_ && n_ > 1;
  probe_every_ = std::max(1, options.probe_every);
  step_rule_ = options.step_rule;
  sync_->measure_wait_cpu(stats_);
  doorbell_ = std::make_unique<Doorbell>(control(), me_, n_);
  // Every local rank has written its pid (watch_peers reads them); the
  // name is gone since the last open, unlink() only records that.
  bootstrap.barrier(options.timeout);
  seg_.unlink();
  sync_->watch_peers();
  free_[0] = arena_;
  if (options.cma != 0 && n_ > 1) probe_single_copy();
  choosing_ = cma_ && options.cma == 1 && path_ == ShmAllreducePath::kAuto;
  if (choosing_ && me_ == 0)
    chooser_ = std::make_unique<PathChooser>(control()->direct_classes.load());
}

// Every rank reads a token from every peer's memory and writes its own into
// the peer's; single copy is used only when every pair worked both ways (the
// node agrees, so every rank takes the same paths). Refusals (Yama,
// seccomp, a peer not dumpable) are not errors: the node stages instead.
void ShmGroup::probe_single_copy() {
  std::random_device rd;
  const uint64_t token = ((static_cast<uint64_t>(rd()) << 32) ^ rd()) | 1;
  std::vector<uint64_t> words(n_, 0);  // words[j]: written by local rank j
  words[me_] = token;
  RankControl& mine = control()->ranks[me_];
  mine.probe_addr.store(reinterpret_cast<uint64_t>(words.data()));
  mine.probe_token.store(token);
  sync_->barrier("shared memory setup");
  bool ok = true;
  for (int k = 0; k < n_ && ok; ++k) {
    if (k == me_) continue;
    const RankControl& peer = control()->ranks[k];
    auto* theirs = reinterpret_cast<uint64_t*>(peer.probe_addr.load());
    uint64_t seen = 0;
    ok = cma_read(peer.pid.load(), theirs + k, &seen, sizeof seen) == 0 &&
         seen == peer.probe_token.load() &&
         cma_write(peer.pid.load(), theirs + me_, &token, sizeof token) == 0;
  }
  sync_->barrier("shared memory setup");
  for (int k = 0; k < n_; ++k)
    if (k != me_) ok = ok && words[k] == control()->ranks[k].probe_token.load();
  mine.cma_ok.store(ok ? 1 : 0);
  sync_->barrier("shared memory setup");
  bool all = true;
  for (int k = 0; k < n_; ++k) all = all && control()->ranks[k].cma_ok.load() == 1;
  cma_ = all;
  if (cma_) {
    void* p = nullptr;
    const size_t bytes = static_cast<size_t>(n_) * kDirectPieceBytes;
    if (posix_memalign(&p, kPage, bytes) != 0)
      throw SystemError("allocating " + std::to_string(bytes) + " bytes of scratch", ENOMEM);
    scratch_.reset(static_cast<char*>(p));
  }
}

ShmGroup::~ShmGroup() {
  if (!stats_ || !sync_) return;
  if (me_ == 0 && probes_seen_ > 0) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "stats: local rank 0/%d: staged step %zu KiB (from %zu), last barrier "
                  "probes %.1f %.1f %.1f us, work %.3f ns per byte, %" PRIu64 " probes",
                  n_, staged_step_bytes() >> 10, chunk_ >> 10, probe_ns_[0] / 1e3,
                  probe_ns_[1] / 1e3, probe_ns_[2] / 1e3, work_ns_per_byte_, probes_seen_);
    TANDEM_LOG_ALWAYS(kInfo, shm, line);  // asked for with TANDEM_SHM_STATS
  }
  for (const OpStats& o : op_stats_) {
    if (o.ops == 0) continue;
    const WaitStats& w = o.waits;
    const double ops = static_cast<double>(o.ops);
    const double waits = static_cast<double>(std::max<uint64_t>(w.waits, 1));
    char line[1024];
    std::snprintf(
        line, sizeof line,
        "stats: local rank %d/%d: %8.0f B x %" PRIu64
        ": %.1f us each, %.1f us "
        "on CPU outside waits; per call "
        "%.2f voluntary + %.2f involuntary context switches, %.2f waits (%.0f%% ready, "
        "%.0f%% spun, %.0f%% yielded, %.0f%% slept), %.1f yields, %.2f futex sleeps, "
        "%.1f us waiting (%.1f on CPU)%s%s",
        me_, n_, o.bytes / ops, o.ops, o.ns / ops / 1e3,
        (static_cast<double>(o.cpu_ns) - static_cast<double>(w.wait_cpu_ns)) / ops / 1e3,
        o.nvcsw / ops, o.nivcsw / ops, w.waits / ops, 100.0 * w.ready / waits,
        100.0 * w.spun / waits, 100.0 * w.yielded / waits, 100.0 * w.slept / waits, w.yields / ops,
        w.sleeps / ops, w.wait_ns / ops / 1e3, w.wait_cpu_ns / ops / 1e3,
        o.step ? (", last staged step " + std::to_string(o.step >> 10) + " KiB").c_str() : "",
        o.direct ? (", " + std::to_string(o.direct) + " direct").c_str() : "");
    TANDEM_LOG_ALWAYS(kInfo, shm, line);  // asked for with TANDEM_SHM_STATS
  }
}

// Counts one collective for TANDEM_SHM_STATS (nothing when off).
class ShmGroup::OpTimer {
 public:
  OpTimer(ShmGroup& g, size_t bytes) : g_(g), bytes_(bytes) {
    if (!g_.stats_) return;
    w0_ = g_.sync_->stats();
    getrusage(RUSAGE_THREAD, &ru_);
    g_.last_step_ = 0;
    g_.last_direct_ = false;
    cpu0_ = cpu_now();
    t0_ = std::chrono::steady_clock::now();
  }
  ~OpTimer() {
    if (!g_.stats_) return;
    const auto t1 = std::chrono::steady_clock::now();
    struct rusage now {};
    getrusage(RUSAGE_THREAD, &now);
    OpStats& o = g_.op_stats_[bytes_ ? 63 - __builtin_clzll(bytes_) : 0];
    ++o.ops;
    o.bytes += bytes_;
    if (g_.last_step_) o.step = g_.last_step_;
    if (g_.last_direct_) ++o.direct;
    o.ns += static_cast<uint64_t>((t1 - t0_).count());
    o.nvcsw += now.ru_nvcsw - ru_.ru_nvcsw;
    o.nivcsw += now.ru_nivcsw - ru_.ru_nivcsw;
    o.cpu_ns += cpu_now() - cpu0_;
    const WaitStats& w = g_.sync_->stats();
    o.waits.waits += w.waits - w0_.waits;
    o.waits.ready += w.ready - w0_.ready;
    o.waits.spun += w.spun - w0_.spun;
    o.waits.yielded += w.yielded - w0_.yielded;
    o.waits.slept += w.slept - w0_.slept;
    o.waits.yields += w.yields - w0_.yields;
    o.waits.sleeps += w.sleeps - w0_.sleeps;
    o.waits.wait_ns += w.wait_ns - w0_.wait_ns;
    o.waits.wait_cpu_ns += w.wait_cpu_ns - w0_.wait_cpu_ns;
  }

 private:
  ShmGroup& g_;
  size_t bytes_;
  WaitStats w0_;
  static uint64_t cpu_now() {
    struct timespec ts {};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
  }
  struct rusage ru_ {};
  uint64_t cpu0_ = 0;
  std::chrono::steady_clock::time_point t0_;
};

char* ShmGroup::staging(int rank, int parity) const {
  return seg_.base() + control_bytes_ + (static_cast<size_t>(rank) * 2 + parity) * staging_bytes_;
}

bool ShmGroup::in_arena(const void* p, size_t bytes) const {
  const char* a = seg_.base() + arena_base() + static_cast<size_t>(me_) * arena_;
  const char* c = static_cast<const char*>(p);
  return arena_ > 0 && c >= a && c + bytes <= a + arena_;
}

void* ShmGroup::allocate(size_t bytes) {
  const size_t need = round_up(std::max<size_t>(bytes, 1), kPage);
  std::lock_guard<std::mutex> lock(alloc_mu_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < need) continue;
    const size_t off = it->first;
    const size_t left = it->second - need;
    free_.erase(it);
    if (left) free_[off + need] = left;
    const size_t abs = arena_base() + static_cast<size_t>(me_) * arena_ + off;
    try {
      seg_.back(abs, need);
    } catch (...) {
      free_[off] = need;  // give it back; coalescing happens on the next free
      throw;
    }
    used_[off] = need;
    return seg_.base() + abs;
  }
  throw InvalidArgument("shared buffer of " + std::to_string(bytes) +
                        " bytes does not fit in this rank's shared arena of " +
                        std::to_string(arena_) + " bytes; raise TANDEM_SHM_ARENA_BYTES");
}

void ShmGroup::free(void* p) {
  if (!p) return;
  const size_t base = arena_base() + static_cast<size_t>(me_) * arena_;
  std::lock_guard<std::mutex> lock(alloc_mu_);
  const size_t off = offset_of(p) - base;
  auto it = used_.find(off);
  if (!in_arena(p, 1) || it == used_.end())
    throw InvalidArgument("free_shared: pointer was not returned by allocate_shared");
  size_t start = off, len = it->second;
  used_.erase(it);
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == start + len) {
    len += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      len += prev->second;
      free_.erase(prev);
    }
  }
  free_[start] = len;
}

void ShmGroup::barrier() { sync_->barrier("barrier"); }

// Allreduce: up to kSmallBytes one barrier (allreduce_small); above, the
// direct path or the staged one (takes_direct), both below.
void ShmGroup::allreduce(const void* send, void* recv, size_t count, const Reduction& r,
                         const PartHook& hook, const ResultSink* sink, const InputSource* source) {
  const size_t es = dtype_size(r.dtype);
  if (count == 0) return;
  OpTimer timer(*this, count * es);
  if (source && send != recv)
    throw InvalidArgument("allreduce: an input source needs send == recv");
  if (source && !hook && count * es <= kSmallBytes) {
    copy_from_source(*source, 0, static_cast<char*>(recv), count * es);
    source = nullptr;
  }
  if (!hook && count * es <= kSmallBytes) return allreduce_small(send, recv, count, r, sink);
  const bool direct = !hook && takes_direct(count * es);
  // Local rank 0 times the calls the chooser decides (their class is the
  // size's); the time goes in at the next such call (publish_choice).
  const bool timed = chooser_ && !hook;
  const auto t0 =
      timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  last_direct_ = direct;
  if (direct) allreduce_direct(send, recv, count, r, sink, source);
  else allreduce_staged(send, recv, count, r, hook, sink, source);
  if (timed) {
    const double ns = static_cast<double>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count());
    pending_ = {PathChooser::size_class(count * es), direct, ns / static_cast<double>(count * es)};
  }
}

bool ShmGroup::takes_direct(size_t bytes) const {
  if (!cma_) return false;
  if (path_ != ShmAllreducePath::kAuto) return path_ == ShmAllreducePath::kDirect;
  if (!choosing_) return direct_by_size(n_, bytes);
  const uint64_t bits = control()->direct_classes.load(std::memory_order_relaxed);
  return (bits >> PathChooser::size_class(bytes)) & 1;
}

void ShmGroup::publish_choice() {
  if (!chooser_ || pending_.size_class < 0) return;
  chooser_->record(pending_.size_class, pending_.direct, pending_.ns_per_byte);
  pending_.size_class = -1;
  const uint64_t bits = chooser_->choices();
  if (bits != control()->direct_classes.load(std::memory_order_relaxed))
    control()->direct_classes.store(bits, std::memory_order_relaxed);
}

// Allreduce, per step of at most the node's step size per rank (chunk_
// with a hook, whose parts must match other nodes'; else decide_step's):
//   1. publish where this rank's input lies: in its arena (zero copy) or
//      copied into its staging buffer (all but its own part, which only it
//      reads, straight from its send buffer);
//   2. barrier; rank j reduces part j of the step reading every rank's input
//      in rank order (so the result never depends on timing), and writes the
//      part once, into its own staging buffer;
//   3. barrier; every rank copies all parts into its recv buffer.
// DRAM traffic per rank is one read of its input and one write of its
// output; the rest stays in cache when the chunk is small enough.
// The first step also publishes whether this rank's call is in place on its
// arena; when every local rank's is, all take allreduce_in_arena from there.
void ShmGroup::allreduce_staged(const void* send, void* recv, size_t count, const Reduction& r,
                                const PartHook& hook, const ResultSink* sink,
                                const InputSource* source) {
  const size_t es = dtype_size(r.dtype);
  // From a source the input goes through the staging buffers, never in
  // place: they are reused every step and stay in cache, while an arena
  // buffer as large as the input would not, and no pass copies everything
  // in up front.
  const bool zero_copy = !source && in_arena(send, count * es);
  // In place (no source) every step reads the lines it then writes.
  const bool streaming = stream_results(count * es, send == recv && !source);
  // Every rank reads the step before its first arrival; local rank 0 may
  // change it only once everyone has arrived (decide_step).
  const bool adapt = !hook && adaptive_step_;
  const size_t step_bytes = adapt ? control()->step_bytes.load(std::memory_order_relaxed) : chunk_;
  const size_t step_elems = std::max<size_t>(1, step_bytes / es);
  last_step_ = step_bytes;
  // Every local rank counts these calls alike, so all time the same ones.
  const bool probe_sized = count * es >= 4 * chunk_;
  const bool probe = adapt && probe_sized && staged_calls_++ % probe_every_ == 0;
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t wait0 = sync_->stats().wait_ns;
  std::vector<const void*> in(n_);
  Reduction stage = r;
  if (hook) stage.finalize = false;
  for (size_t start = 0; start < count; start += step_elems) {
    const size_t m = std::min(step_elems, count - start);
    const int b = next_parity();
    const char* src = static_cast<const char*>(send) + start * es;
    char* mine = staging(me_, b);
    size_t lo, hi;
    split(m, n_, me_, es, &lo, &hi);
    // Peers only read the parts they reduce: this rank's own part is read
    // from its send buffer (or the source), not copied in.
    if (source) {
      copy_from_source(*source, start * es, mine, lo * es);
      copy_from_source(*source, (start + hi) * es, mine + hi * es, (m - hi) * es);
    } else if (!zero_copy) {
      std::memcpy(mine, src, lo * es);
      std::memcpy(mine + hi * es, src + hi * es, (m - hi) * es);
    }
    control()->ranks[me_].offset[b].store(offset_of(zero_copy ? src : mine),
                                          std::memory_order_relaxed);
    if (start == 0)
      control()->ranks[me_].value[b].store(zero_copy && send == recv ? 1 : 0,
                                           std::memory_order_relaxed);
    sync_->barrier("allreduce (shared memory)");
    if (start == 0) {
      if (me_ == 0 && !hook) publish_choice();
      if (adapt && me_ == 0) decide_step();
      if (probe) probe_barrier();
      bool all_in_arena = true;
      for (int j = 0; j < n_; ++j)
        all_in_arena =
            all_in_arena && control()->ranks[j].value[b].load(std::memory_order_relaxed) == 1;
      if (all_in_arena) {
        allreduce_in_arena(static_cast<char*>(recv), count, step_elems, r, hook, sink, b);
        if (adapt && me_ == 0) account_staged(count * es, t0, wait0, probe_sized);
        return;
      }
    }
    if (hi > lo) {
      for (int j = 0; j < n_; ++j)
        in[j] =
            seg_.base() + control()->ranks[j].offset[b].load(std::memory_order_relaxed) + lo * es;
      if (source) {
        reduce_from_source(*source, (start + lo) * es, (start + hi) * es, mine + lo * es, in.data(),
                           stage);
      } else {
        in[me_] = src + lo * es;
        reduce(mine + lo * es, in.data(), n_, hi - lo, stage);
      }
    }
    if (hook && hi > lo) hook(mine + lo * es, hi - lo);
    sync_->barrier("allreduce (shared memory)");
    char* dst = static_cast<char*>(recv) + start * es;
    for (int j = 0; j < n_; ++j) {
      split(m, n_, j, es, &lo, &hi);
      if (hi <= lo) continue;
      if (sink) (*sink)((start + lo) * es, staging(j, b) + lo * es, (hi - lo) * es);
      else if (streaming) stream_copy(dst + lo * es, staging(j, b) + lo * es, (hi - lo) * es);
      else std::memcpy(dst + lo * es, staging(j, b) + lo * es, (hi - lo) * es);
    }
  }
  if (adapt && me_ == 0) account_staged(count * es, t0, wait0, probe_sized);
}

size_t staged_step(size_t base, size_t most, double barrier_ns, double work_ns_per_byte) {
  size_t step = base;
  while (step < most && 2 * barrier_ns * 8 > work_ns_per_byte * static_cast<double>(step))
    step = std::min(most, step * 2);
  return step;
}

namespace {
int step_class(size_t base, size_t step) {
  int k = 0;
  while (k + 1 < kStepClasses && (base << (k + 1)) <= step) ++k;
  return step > (base << k) ? std::min(k + 1, kStepClasses - 1) : k;
}
}  // namespace

size_t climb_step(size_t base, size_t most, size_t current, size_t want,
                  const double* wall_ns_per_byte) {
  const int k = step_class(base, current);
  const double here = wall_ns_per_byte[k];
  // 5%: two smoothed measurements closer than that are the same speed here.
  if (k > 0 && here > 0 && wall_ns_per_byte[k - 1] > 0 && wall_ns_per_byte[k - 1] * 1.05 < here)
    return base << (k - 1);
  if (want <= current) return want;
  if (k + 1 < kStepClasses && here > 0 && wall_ns_per_byte[k + 1] > here * 1.05) return current;
  return std::min(most, current * 2);
}

size_t ShmGroup::staged_step_bytes() const {
  return adaptive_step_ ? control()->step_bytes.load(std::memory_order_relaxed) : chunk_;
}

// What a barrier costs on this node right now, measured as such: right
// after the staged allreduce's first barrier, when every rank has just
// left one, every rank times one more with nothing in between. Spinning
// ranks with CPUs of their own pass it in well under a microsecond; ranks
// that must yield (more ranks than CPUs) hand their CPU to whatever else
// is runnable, and beside a busy thread that is a whole scheduler slice
// per barrier, so that small steps, many barriers each, then lose to a few
// large ones (docs/engine.md, "Step size").
// Each rank publishes its time; local rank 0 reads them in a later call.
void ShmGroup::probe_barrier() {
  const auto t0 = std::chrono::steady_clock::now();
  sync_->barrier("allreduce (shared memory)");
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  control()->ranks[me_].probe_ns.store(static_cast<uint64_t>(ns), std::memory_order_relaxed);
  ++probes_;
}

// Local rank 0, after the first barrier of a staged allreduce (every rank
// has read this call's step, and published its probe times of earlier
// calls): the next calls' step from the barrier cost (the slowest rank's
// probe, the least of the node's last three, so that one preemption does
// not move it) and this rank's work per byte outside waits since the last
// decision (staged_step). Memory for larger steps is backed here first: if
// /dev/shm cannot give it, the node keeps the steps it has.
void ShmGroup::decide_step() {
  if (probes_seen_ == probes_) return;
  probes_seen_ = probes_;
  uint64_t slowest = 0;
  for (int j = 0; j < n_; ++j)
    slowest = std::max(slowest, control()->ranks[j].probe_ns.load(std::memory_order_relaxed));
  probe_ns_[2] = probe_ns_[1];
  probe_ns_[1] = probe_ns_[0];
  probe_ns_[0] = static_cast<double>(slowest);
  double barrier_ns = probe_ns_[0];
  for (uint64_t k = 1; k < std::min<uint64_t>(probes_seen_, 3); ++k)
    barrier_ns = std::min(barrier_ns, probe_ns_[k]);
  if (work_bytes_ > 0) work_ns_per_byte_ = work_ns_ / work_bytes_;
  work_ns_ = work_bytes_ = 0;
  if (work_ns_per_byte_ <= 0) return;
  const size_t current = control()->step_bytes.load(std::memory_order_relaxed);
  if (wall_bytes_ > 0) {
    double& w = wall_ns_per_byte_[step_class(chunk_, current)];
    const double now = wall_ns_ / wall_bytes_;
    w = w > 0 ? 0.5 * (w + now) : now;
  }
  wall_ns_ = wall_bytes_ = 0;
  // What was slower a while ago may not be now (busy neighbours come and go).
  if (++decisions_ % 64 == 0)
    std::fill(std::begin(wall_ns_per_byte_), std::end(wall_ns_per_byte_), 0.0);
  size_t want = step_rule_
                    ? step_rule_(barrier_ns, work_ns_per_byte_)
                    : climb_step(chunk_, staging_bytes_, current,
                                 staged_step(chunk_, staging_bytes_, barrier_ns, work_ns_per_byte_),
                                 wall_ns_per_byte_);
  want = std::min(staging_bytes_, std::max(chunk_, round_up(want, kPage)));
  if (want > backed_step_ && !backing_failed_) {
    try {
      for (int j = 0; j < n_; ++j)
        for (int b = 0; b < 2; ++b)
          seg_.back(offset_of(staging(j, b)) + backed_step_, want - backed_step_);
      backed_step_ = want;
    } catch (const SystemError&) { backing_failed_ = true; }
  }
  want = std::min(want, backed_step_);
  if (want != control()->step_bytes.load(std::memory_order_relaxed))
    control()->step_bytes.store(want, std::memory_order_relaxed);
}

// Local rank 0: a staged allreduce's time outside waits, for decide_step.
void ShmGroup::account_staged(size_t bytes, std::chrono::steady_clock::time_point t0,
                              uint64_t wait0, bool timed) {
  const double all = static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count());
  if (timed) {
    wall_ns_ += all;
    wall_bytes_ += static_cast<double>(bytes);
  }
  const double waited = static_cast<double>(sync_->stats().wait_ns - wait0);
  work_ns_ += std::max(0.0, all - waited);
  work_bytes_ += static_cast<double>(bytes);
}

// Allreduce straight from the ranks' own buffers, two barriers whatever
// the size (docs/engine.md, "Single copy": under contention every
// barrier costs a wake-up or a lost time slice, and the staged path takes
// two per step):
//   1. publish where send and recv lie; barrier;
//   2. rank j owns part j (split as the staged path splits a step). Piece
//      by piece it reads every peer's part j (one kernel copy into scratch,
//      or in place when the peer's buffer is in its arena), reduces in
//      rank order into its own recv, and writes the result into every
//      peer's recv (one kernel copy, or memcpy into an arena buffer);
//   3. barrier: every part has reached every rank, and no rank touches
//      another's buffers again.
// Only rank j reads or writes part j of anyone's buffers, and it reads a
// piece before it writes it, so send == recv (in place) is safe.
void ShmGroup::allreduce_direct(const void* send, void* recv, size_t count, const Reduction& r,
                                const ResultSink* sink, const InputSource* source) {
  static const char* const what = "allreduce (shared memory)";
  const size_t es = dtype_size(r.dtype);
  const size_t bytes = count * es;
  char* out = static_cast<char*>(recv);
  const char* own = static_cast<const char*>(send);
  size_t lo, hi;
  split(count, n_, me_, es, &lo, &hi);
  if (source) {
    // Peers read every part but this rank's from the buffer (send == recv).
    copy_from_source(*source, 0, out, lo * es);
    copy_from_source(*source, hi * es, out + hi * es, bytes - hi * es);
  }
  const int b = next_parity();
  RankControl& mine = control()->ranks[me_];
  mine.send_addr[b].store(reinterpret_cast<uint64_t>(send), std::memory_order_relaxed);
  mine.recv_addr[b].store(reinterpret_cast<uint64_t>(recv), std::memory_order_relaxed);
  mine.send_off[b].store(segment_offset(send, bytes), std::memory_order_relaxed);
  mine.recv_off[b].store(segment_offset(recv, bytes), std::memory_order_relaxed);
  sync_->barrier(what);
  if (me_ == 0) publish_choice();
  // A peer that died since its arrival must not be addressed by pid.
  sync_->check_alive(what);
  const char* peer_send[kMaxLocalRanks];
  char* peer_recv[kMaxLocalRanks];
  const char* send_mapped[kMaxLocalRanks];
  char* recv_mapped[kMaxLocalRanks];
  pid_t pid[kMaxLocalRanks];
  for (int k = 0; k < n_; ++k) {
    const RankControl& c = control()->ranks[k];
    peer_send[k] = reinterpret_cast<const char*>(c.send_addr[b].load(std::memory_order_relaxed));
    peer_recv[k] = reinterpret_cast<char*>(c.recv_addr[b].load(std::memory_order_relaxed));
    send_mapped[k] = mapped(c.send_off[b].load(std::memory_order_relaxed));
    recv_mapped[k] = mapped(c.recv_off[b].load(std::memory_order_relaxed));
    pid[k] = c.pid.load(std::memory_order_relaxed);
  }
  const size_t piece = std::max<size_t>(1, kDirectPieceBytes / es);
  // In place (no source), the reduction reads the lines of out it then
  // writes: the result goes there directly, with normal stores.
  const bool streaming = stream_results(bytes, send == recv && !source);
  char* const own_slot = scratch_.get() + static_cast<size_t>(me_) * kDirectPieceBytes;
  const void* in[kMaxLocalRanks];
  for (size_t at = lo; at < hi; at += piece) {
    const size_t m = std::min(piece, hi - at);
    const size_t off = at * es, len = m * es;
    for (int k = 0; k < n_; ++k) {
      if (k == me_) continue;
      if (send_mapped[k]) {
        in[k] = send_mapped[k] + off;
        continue;
      }
      char* land = scratch_.get() + static_cast<size_t>(k) * kDirectPieceBytes;
      if (const int err = cma_read(pid[k], peer_send[k] + off, land, len))
        cma_failed(what, k, err, "reading");
      in[k] = land;
    }
    // Large messages: the piece is reduced into scratch (in cache) and
    // stored to recv with non-temporal stores, which saves reading recv's
    // lines from DRAM before overwriting them.
    char* result = streaming ? own_slot : out + off;
    if (source) {
      reduce_from_source(*source, off, off + len, result, in, r);
    } else {
      in[me_] = own + off;
      reduce(result, in, n_, m, r);
    }
    if (streaming) stream_copy(out + off, result, len);
    for (int k = 0; k < n_; ++k) {
      if (k == me_) continue;
      if (recv_mapped[k]) {
        // A peer in place on its arena: this rank has just read those lines.
        if (stream_results(bytes, recv_mapped[k] == send_mapped[k]))
          stream_copy(recv_mapped[k] + off, result, len);
        else std::memcpy(recv_mapped[k] + off, result, len);
      } else if (const int err = cma_write(pid[k], peer_recv[k] + off, result, len)) {
        cma_failed(what, k, err, "writing");
      }
    }
  }
  sync_->barrier(what);
  if (sink) (*sink)(0, out, bytes);
}

// A single-copy access failed mid-collective: a dead peer is PeerLost (as
// in a barrier); anything else fails the node with what was refused.
void ShmGroup::cma_failed(const char* what, int k, int err, const char* verb) {
  // ESRCH: the peer is gone. Its pidfd turns readable only once it has
  // exited completely, later than its memory goes, so check_alive alone
  // can still see it alive (the SIGKILL drill failed so, 1 run in 2).
  if (err == ESRCH) sync_->peer_died(what, k);
  sync_->check_alive(what);
  sync_->abort(AbortKind::kAborted, std::string(what) + ": " + verb + " rank " +
                                        std::to_string(sync_->world_rank(k)) +
                                        "'s buffer (same node) failed: " + cma_error_text(err));
  sync_->check_aborted();
  throw AbortedError(what);  // not reached
}

// This rank's input is read where the source has it, piece by piece (a
// fused batch: tensor by tensor); in[me_] is overwritten.
void ShmGroup::reduce_from_source(const InputSource& source, size_t from, size_t to, char* out,
                                  const void** in, const Reduction& r) const {
  const size_t es = dtype_size(r.dtype);
  const char* peer[kMaxLocalRanks];
  for (int j = 0; j < n_; ++j) peer[j] = static_cast<const char*>(in[j]);
  for (size_t at = from; at < to;) {
    size_t n = 0;
    const void* p = source(at, &n);
    if (!p || n == 0 || n % es != 0)
      throw Error("allreduce: the input source gave no whole elements at byte " +
                  std::to_string(at));
    n = std::min(n, to - at);
    for (int j = 0; j < n_; ++j) in[j] = peer[j] + (at - from);
    in[me_] = p;
    reduce(out + (at - from), in, n_, n / es, r);
    at += n;
  }
}

// Every local rank reduces in place on a buffer in its arena (one from
// tandem_alloc_shared, or the runtime's fusion buffer when it packs the
// input itself), and the first barrier (in allreduce) published where each
// lies. Then no input needs staging and no step needs a barrier before its
// reduction: per step, rank j reduces part j into its own buffer, in place
// (reduce() writes a block only after reading it from every input, and no
// other rank reads or writes that part of rank j's buffer in this step);
// barrier; every rank copies the parts from their owners' buffers. A last
// barrier keeps every buffer untouched until all ranks have copied out.
// 1 + steps + 1 barriers instead of 2 per step. The steps are allreduce's
// (the same parts, so that a cross-node hook pairs the same parts on every
// node whichever path a node takes), and they keep the copy-out reading
// what the owner just wrote while it is still in cache.
void ShmGroup::allreduce_in_arena(char* buf, size_t count, size_t step_elems, const Reduction& r,
                                  const PartHook& hook, const ResultSink* sink, int parity) {
  const size_t es = dtype_size(r.dtype);
  // In place: the copy-out rewrites lines a peer read in this step, so
  // normal stores (stream_results; in a cross-core variant of the probe
  // non-temporal stores were no cheaper either).
  Reduction stage = r;
  if (hook) stage.finalize = false;
  const void* in[kMaxLocalRanks];
  const char* base[kMaxLocalRanks];
  for (int j = 0; j < n_; ++j)
    base[j] = seg_.base() + control()->ranks[j].offset[parity].load(std::memory_order_relaxed);
  for (size_t start = 0; start < count; start += step_elems) {
    const size_t m = std::min(step_elems, count - start);
    size_t lo, hi;
    split(m, n_, me_, es, &lo, &hi);
    if (hi > lo) {
      char* part = buf + (start + lo) * es;
      for (int j = 0; j < n_; ++j) in[j] = base[j] + (start + lo) * es;
      reduce(part, in, n_, hi - lo, stage);
      if (hook) hook(part, hi - lo);
    }
    sync_->barrier("allreduce (shared memory)");
    for (int j = 0; j < n_; ++j) {
      split(m, n_, j, es, &lo, &hi);
      if (hi <= lo) continue;
      const size_t off = (start + lo) * es, bytes = (hi - lo) * es;
      if (sink) (*sink)(off, base[j] + off, bytes);
      else if (j != me_)  // this rank's own part is already in place
        std::memcpy(buf + off, base[j] + off, bytes);
    }
  }
  sync_->barrier("allreduce (shared memory)");
}

// Small messages are latency-bound: one barrier instead of two, and every
// rank reduces the whole (tiny) vector itself, in the same rank order, so
// every rank still gets the same bits.
void ShmGroup::allreduce_small(const void* send, void* recv, size_t count, const Reduction& r,
                               const ResultSink* sink) {
  const size_t es = dtype_size(r.dtype);
  if (count * es <= kInlineBytes) {
    // In the barrier counter's own cache line: one miss per peer, not two.
    std::memcpy(sync_->inline_out(), send, count * es);
    sync_->barrier("allreduce (shared memory)");
    const void* in[kMaxLocalRanks];
    for (int j = 0; j < n_; ++j) in[j] = sync_->inline_in(j);
    reduce(recv, in, n_, count, r);
    if (sink) (*sink)(0, recv, count * es);
    return;
  }
  const int b = next_parity();
  std::memcpy(staging(me_, b), send, count * es);
  sync_->barrier("allreduce (shared memory)");
  const void* in[kMaxLocalRanks];
  for (int j = 0; j < n_; ++j) in[j] = staging(j, b);
  reduce(recv, in, n_, count, r);
  if (sink) (*sink)(0, recv, count * es);
}

// Broadcast: the root copies a step into its staging buffer, one barrier,
// everyone else copies it out. The next step uses the other buffer, and the
// one after passes a barrier that every reader reaches only after reading.
void ShmGroup::broadcast(void* buf, size_t bytes, int root) {
  if (n_ == 1) return;
  for (size_t start = 0; start < bytes; start += chunk_) {
    const size_t m = std::min(chunk_, bytes - start);
    const int b = next_parity();
    char* p = static_cast<char*>(buf) + start;
    if (me_ == root) std::memcpy(staging(root, b), p, m);
    sync_->barrier("broadcast (shared memory)");
    if (me_ != root) std::memcpy(p, staging(root, b), m);
  }
}

void ShmGroup::allgatherv(const void* send, void* recv, const std::vector<size_t>& bytes) {
  size_t most = 0;
  std::vector<size_t> at(n_, 0);
  for (int j = 0; j < n_; ++j) {
    most = std::max(most, bytes[j]);
    if (j > 0) at[j] = at[j - 1] + bytes[j - 1];
  }
  char* out = static_cast<char*>(recv);
  if (out + at[me_] != send && bytes[me_] > 0) std::memmove(out + at[me_], send, bytes[me_]);
  if (n_ == 1) return;
  for (size_t start = 0; start < most; start += chunk_) {
    const int b = next_parity();
    const size_t mine = bytes[me_] > start ? std::min(chunk_, bytes[me_] - start) : 0;
    if (mine) std::memcpy(staging(me_, b), out + at[me_] + start, mine);
    sync_->barrier("allgather (shared memory)");
    for (int j = 0; j < n_; ++j) {
      if (j == me_ || bytes[j] <= start) continue;
      std::memcpy(out + at[j] + start, staging(j, b), std::min(chunk_, bytes[j] - start));
    }
  }
}

// Alltoallv: each step, the staging buffer holds one slot per destination.
// The first step also publishes this rank's largest block, from which every
// rank computes the same number of steps.
void ShmGroup::alltoallv(const void* send, const std::vector<size_t>& send_bytes, void* recv,
                         const std::vector<size_t>& recv_bytes) {
  const size_t slot = chunk_ / n_ >= 64 ? chunk_ / n_ / 64 * 64 : chunk_ / n_;
  std::vector<size_t> sat(n_, 0), rat(n_, 0);
  size_t my_most = 0;
  for (int j = 1; j < n_; ++j) {
    sat[j] = sat[j - 1] + send_bytes[j - 1];
    rat[j] = rat[j - 1] + recv_bytes[j - 1];
  }
  for (int j = 0; j < n_; ++j)
    if (j != me_) my_most = std::max(my_most, send_bytes[j]);
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  if (recv_bytes[me_] != send_bytes[me_])
    throw MismatchError("alltoall: this rank sends " + std::to_string(send_bytes[me_]) +
                        " bytes to itself but expects " + std::to_string(recv_bytes[me_]));
  // Zero bytes may come with null buffers, which memmove must not be given.
  if (send_bytes[me_]) std::memmove(out + rat[me_], in + sat[me_], send_bytes[me_]);
  if (n_ == 1) return;
  size_t steps = 1;
  for (size_t s = 0; s < steps; ++s) {
    const int b = next_parity();
    const size_t start = s * slot;
    for (int j = 0; j < n_; ++j) {
      if (j == me_ || send_bytes[j] <= start) continue;
      std::memcpy(staging(me_, b) + j * slot, in + sat[j] + start,
                  std::min(slot, send_bytes[j] - start));
    }
    control()->ranks[me_].value[b].store(my_most, std::memory_order_relaxed);
    sync_->barrier("alltoall (shared memory)");
    if (s == 0) {
      size_t most = 0;
      for (int j = 0; j < n_; ++j)
        most = std::max<size_t>(most, control()->ranks[j].value[b].load());
      steps = std::max<size_t>(1, (most + slot - 1) / slot);
    }
    for (int j = 0; j < n_; ++j) {
      if (j == me_ || recv_bytes[j] <= start) continue;
      std::memcpy(out + rat[j] + start, staging(j, b) + me_ * slot,
                  std::min(slot, recv_bytes[j] - start));
    }
  }
}

// Reducescatter: like allreduce's first half, except that rank j reduces
// exactly the elements it receives, straight into recv.
void ShmGroup::reducescatter(const void* send, void* recv, const std::vector<size_t>& counts,
                             const Reduction& r) {
  const size_t es = dtype_size(r.dtype);
  size_t total = 0, my_lo = 0;
  for (int j = 0; j < n_; ++j) {
    if (j == me_) my_lo = total;
    total += counts[j];
  }
  const size_t my_hi = my_lo + counts[me_];
  const size_t step_elems = chunk_ / es;
  std::vector<const void*> in(n_);
  for (size_t start = 0; start < total; start += step_elems) {
    const size_t m = std::min(step_elems, total - start);
    const int b = next_parity();
    std::memcpy(staging(me_, b), static_cast<const char*>(send) + start * es, m * es);
    sync_->barrier("reducescatter (shared memory)");
    const size_t lo = std::max(start, my_lo), hi = std::min(start + m, my_hi);
    if (hi <= lo) continue;
    for (int j = 0; j < n_; ++j) in[j] = staging(j, b) + (lo - start) * es;
    reduce(static_cast<char*>(recv) + (lo - my_lo) * es, in.data(), n_, hi - lo, r);
  }
}

}  // namespace tandem
