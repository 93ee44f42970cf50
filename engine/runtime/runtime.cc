#include "runtime/runtime.h"

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>

#include <algorithm>
#include <numeric>
#include <sstream>
#include <string_view>
#include <tuple>
#include <unordered_set>

#include "common/errors.h"
#include "runtime/executor.h"
#include "runtime/fusion_plan.h"

namespace tandem::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// The batching window closes once no tensor was enqueued for this long: a
// framework that hands over a step's gradients back to back (a few µs
// apart, from C or Python) gets them into one cycle, and the cycle does not
// wait out TANDEM_CYCLE_TIME for tensors that are not coming. Most
// frameworks wait on a handle right after enqueueing, which closes the
// window at once (BlockedWaiter); the gap matters for the others, and must
// outlast the moment the runtime thread, woken by the first enqueue, takes
// the enqueuing thread's CPU (20 µs split a 100-tensor step into two
// cycles on a busy 2-core machine; 100 µs did not, and was 10% faster).
constexpr auto kQuietGap = std::chrono::microseconds(100);
// How often an idle rank that peers can wake looks at the stall inspector
// (more often when the stall check time is short).
constexpr auto kIdleCheck = std::chrono::seconds(1);
// How often a rank whose tensors wait for peers runs a cycle anyway: a peer
// that died after the cycle that announced them would never ask for one,
// and only a collective notices it (the data path's liveness checks).
constexpr auto kPendingCheck = std::chrono::milliseconds(100);
// Across nodes a relayed wake-up can be lost (UDP): a rank asleep this long
// runs a round anyway, which bounds the delay a lost one causes (and wakes
// every rank: an idle job runs 40 rounds a second instead of one per
// TANDEM_IDLE_WAIT per rank).
constexpr auto kRelayFallback = std::chrono::milliseconds(25);
// Across nodes, with the relay: for this long after the last round in which
// any rank announced something, idle ranks keep polling every
// TANDEM_IDLE_WAIT as without it. A step's rounds follow each other
// closely, and a wake-up through the relay costs a thread hop on every node
// (2 ranks on 2 nodes, 100 x 16 KiB: 925 us per step when every round went
// through it, 786 us polling). After it they sleep until a relayed request;
// a rank starting a round tells the other nodes once half of it has passed.
constexpr auto kStayAwake = std::chrono::milliseconds(20);

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

template <typename D>
Clock::duration ms(D v) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(v));
}

tandem_result_t code_of(const std::exception& e) {
  if (dynamic_cast<const PeerLostError*>(&e)) return TANDEM_ERR_PEER_LOST;
  if (dynamic_cast<const TimeoutError*>(&e)) return TANDEM_ERR_TIMEOUT;
  if (dynamic_cast<const AbortedError*>(&e)) return TANDEM_ERR_ABORTED;
  if (dynamic_cast<const MismatchError*>(&e)) return TANDEM_ERR_MISMATCH;
  if (dynamic_cast<const SystemError*>(&e)) return TANDEM_ERR_SYSTEM;
  if (dynamic_cast<const InvalidArgument*>(&e)) return TANDEM_ERR_INVALID_ARGUMENT;
  if (dynamic_cast<const UnsupportedError*>(&e)) return TANDEM_ERR_UNSUPPORTED;
  return TANDEM_ERR_INTERNAL;
}

}  // namespace

Runtime::Runtime(int rank, int size, std::unique_ptr<DataPathFactory> factory, Settings settings,
                 LogTap log_tap, std::unique_ptr<DevicePath> device)
    : rank_(rank),
      size_(size),
      settings_(std::move(settings)),
      log_tap_(std::move(log_tap)),
      factory_(std::move(factory)),
      device_(std::move(device)) {
  std::vector<int> all(static_cast<size_t>(size_));
  std::iota(all.begin(), all.end(), 0);
  auto dp = factory_->create(all);
  if (!dp) throw Error("runtime: the data path gave no communicator for the world");
  world_ = dp.get();
  sets_.push_back(std::make_shared<ProcessSet>(0, all, std::move(dp), settings_.cache_capacity));
  if (rank_ == 0 && !settings_.timeline_path.empty())
    timeline_.start(settings_.timeline_path, settings_.timeline_mark_cycles);
  if (log_tap_ || log::enabled(log::Level::kInfo, log::Subsys::runtime)) {
    char text[512];
    std::snprintf(text, sizeof text,
                  "fusing allreduces up to %zu bytes, batching window %g ms, response cache of "
                  "%zu entries per process set, idle ranks %s, %s scheduling%s",
                  settings_.fusion_threshold_bytes, settings_.cycle_time_ms,
                  settings_.cache_capacity,
                  world_->can_wake_members() ? "sleep until a peer asks for a round"
                                             : "poll every TANDEM_IDLE_WAIT",
                  settings_.batch_scheduling ? "SCHED_BATCH" : "SCHED_OTHER",
                  settings_.timeline_path.empty() || rank_ != 0
                      ? ""
                      : ("; timeline to " + settings_.timeline_path).c_str());
    report(log::Level::kInfo, text, __LINE__);
  }
  thread_ = std::thread([this] { loop(); });
}

void Runtime::stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  stop_ = true;
  wake();
  if (thread_.joinable()) thread_.join();
  fail_all(TANDEM_ERR_ABORTED, "the tandem runtime was shut down (tandem_finalize)");
  timeline_.stop();
}

Runtime::~Runtime() { stop(); }

void Runtime::report(log::Level level, const std::string& message, int line) const {
  if (log_tap_) log_tap_(level, message);
  else if (log::enabled(level, log::Subsys::runtime))
    log::write_string(level, log::Subsys::runtime, __FILE__, line, message);
}

// Called on every enqueue: cheap when the background thread already knows
// there is work (it reads last_work_ns_ for the batching window).
void Runtime::wake() {
  last_work_ns_.store(now_ns(), std::memory_order_relaxed);
  if (work_.load(std::memory_order_seq_cst)) return;
  {
    std::lock_guard<std::mutex> lock(work_mu_);
    if (!work_) {
      first_work_ = Clock::now();
      work_.store(true, std::memory_order_seq_cst);
    }
  }
  work_cv_.notify_one();
  world_->wake_self();
}

Runtime::BlockedWaiter::BlockedWaiter(Runtime& rt, const HandleState& h) {
  if (h.done()) return;
  rt_ = &rt;
  h_ = &h;
  {
    std::lock_guard<std::mutex> lock(rt.wait_mu_);
    if (rt.waited_.empty()) rt.blocked_since_ = Clock::now();
    ++rt.waited_[h_];
  }
  rt.blocked_waiters_.fetch_add(1, std::memory_order_seq_cst);
  if (rt.in_window_.load(std::memory_order_seq_cst)) {
    // Taking the lock orders this with the window's predicate check, so
    // the notification cannot fall between its check and its sleep.
    { std::lock_guard<std::mutex> lock(rt.work_mu_); }
    rt.work_cv_.notify_one();
  }
}

Runtime::BlockedWaiter::~BlockedWaiter() {
  if (!rt_) return;
  rt_->blocked_waiters_.fetch_sub(1, std::memory_order_seq_cst);
  std::lock_guard<std::mutex> lock(rt_->wait_mu_);
  auto it = rt_->waited_.find(h_);
  if (it != rt_->waited_.end() && --it->second == 0) rt_->waited_.erase(it);
}

void Runtime::throw_if_broken() const {
  std::lock_guard<std::mutex> lock(broken_mu_);
  switch (broken_code_) {
    case TANDEM_SUCCESS: return;
    case TANDEM_ERR_PEER_LOST: throw PeerLostError(broken_message_);
    case TANDEM_ERR_TIMEOUT: throw TimeoutError(broken_message_);
    default: throw AbortedError(broken_message_);
  }
}

// ------------------------------------------------------------------ enqueue

std::shared_ptr<HandleState> Runtime::enqueue(const std::vector<TensorArg>& tensors,
                                              const OpArgs& args) {
  auto set = find_set(args.process_set);
  if (!set) throw InvalidArgument("process set " + std::to_string(args.process_set) +
                                  " does not exist (add it with tandem_add_process_set)");
  if (!set->member())
    throw InvalidArgument("rank " + std::to_string(rank_) + " is not a member of process set " +
                          std::to_string(args.process_set));
  if (tensors.empty()) throw InvalidArgument("enqueue: no tensors given");
  const int set_size = static_cast<int>(set->global_ranks().size());
  std::vector<Request> requests;
  for (const TensorArg& t : tensors) {
    Request q;
    q.name = t.name;
    q.type = args.type;
    q.dtype = t.dtype;
    q.device = t.device;
    q.shape = t.shape;
    // Built only for an error message: enqueue runs for every tensor of every step.
    auto what = [&] { return std::string(op_type_name(args.type)) + " '" + t.name + "'"; };
    if (t.name.empty()) throw InvalidArgument(std::string(op_type_name(args.type)) +
                                              ": the tensor name is empty; give every tensor a "
                                              "name that is the same on every rank");
    if (dtype_bytes(t.dtype) == 0)
      throw InvalidArgument(what() + ": unknown dtype " + std::to_string(t.dtype));
    // GPU tensors are negotiated like host ones and run on the device path
    // (device_path.h), which also reports an unusable GPU path on every rank.
    if (t.device < TANDEM_DEVICE_CPU)
      throw InvalidArgument(what() + ": device " + std::to_string(t.device) +
                            " is neither TANDEM_DEVICE_CPU (-1) nor a CUDA device index (>= 0)");
    for (int64_t d : t.shape)
      if (d < 0) throw InvalidArgument(what() + ": negative dimension in shape " +
                                       shape_string(t.shape));
    if (q.elements() > 0 && !t.input)
      throw InvalidArgument(what() + ": input is NULL but the shape " + shape_string(t.shape) +
                            " has elements");
    bool needs_output = args.type == OpType::kAllreduce || args.type == OpType::kBroadcast;
    if (needs_output && q.elements() > 0 && !t.output)
      throw InvalidArgument(what() + ": output is NULL; pass the buffer for the result (it may "
                            "be the input)");
    if (args.type == OpType::kAllreduce || args.type == OpType::kReducescatter) {
      if (args.op < 0 || args.op >= TANDEM_OP_COUNT_)
        throw InvalidArgument(what() + ": unknown reduce op " + std::to_string(args.op));
      bool floating = t.dtype == TANDEM_FLOAT16 || t.dtype == TANDEM_BFLOAT16 ||
                      t.dtype == TANDEM_FLOAT32 || t.dtype == TANDEM_FLOAT64;
      if (!floating && (args.prescale != 1.0 || args.postscale != 1.0))
        throw InvalidArgument(what() + ": prescale/postscale must be 1.0 for " +
                              dtype_name(t.dtype) + " tensors (scaling applies to floating "
                              "types only)");
      q.op = args.op;
      q.prescale = args.prescale;
      q.postscale = args.postscale;
    }
    if (args.type == OpType::kBroadcast) {
      if (set->set_rank_of(args.root) < 0)
        throw InvalidArgument(what() + ": root " + std::to_string(args.root) +
                              " is not a rank of process set " + std::to_string(set->id()));
      q.root = args.root;
    }
    if ((args.type == OpType::kAllgather || args.type == OpType::kAlltoall ||
         args.type == OpType::kReducescatter) && t.shape.empty())
      throw InvalidArgument(what() + ": needs at least one dimension (it works on the first)");
    if (args.type == OpType::kAlltoall) {
      if (args.splits.empty()) {
        if (t.shape[0] % set_size != 0)
          throw InvalidArgument(what() + ": first dimension " + std::to_string(t.shape[0]) +
                                " does not divide into " + std::to_string(set_size) +
                                " equal parts; pass splits");
        q.splits.assign(static_cast<size_t>(set_size), t.shape[0] / set_size);
      } else {
        if (static_cast<int>(args.splits.size()) != set_size)
          throw InvalidArgument(what() + ": " + std::to_string(args.splits.size()) +
                                " splits given, the process set has " +
                                std::to_string(set_size) + " ranks");
        int64_t sum = 0;
        for (int64_t s : args.splits) {
          if (s < 0) throw InvalidArgument(what() + ": negative split " + shape_string(args.splits));
          sum += s;
        }
        if (sum != t.shape[0])
          throw InvalidArgument(what() + ": splits " + shape_string(args.splits) + " sum to " +
                                std::to_string(sum) + ", the first dimension is " +
                                std::to_string(t.shape[0]));
        q.splits = args.splits;
      }
    }
    requests.push_back(std::move(q));
  }

  {
    std::lock_guard<std::mutex> lock(join_mu_);
    if (join_handle_ && args.process_set == TANDEM_GLOBAL_PROCESS_SET)
      throw InvalidArgument(requests.front().name + ": this rank has called join; enqueue "
                            "nothing more until the join completes");
  }
  std::shared_ptr<HandleState> handle;
  {
    std::lock_guard<std::mutex> lock(set->mu);
    throw_if_broken();
    // A group's own names are compared pairwise when it is small (most are
    // one tensor), through a set when large.
    std::unordered_set<std::string_view> names;
    if (requests.size() > 8) names.reserve(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      const Request& q = requests[i];
      bool repeated = false;
      if (requests.size() > 8) repeated = !names.insert(q.name).second;
      else
        for (size_t j = 0; j < i && !repeated; ++j) repeated = requests[j].name == q.name;
      if (repeated || set->pending.count(q.name))
        throw DuplicateNameError(std::string(op_type_name(q.type)) + " '" + q.name +
                                 "': a tensor of this name is still in flight in process set " +
                                 std::to_string(set->id()) +
                                 "; wait for it to complete or use another name");
    }
    handle = handles_.create(static_cast<int>(requests.size()));
    for (size_t i = 0; i < requests.size(); ++i) {
      TensorEntry e;
      e.request = std::move(requests[i]);
      e.input = tensors[i].input;
      e.output = tensors[i].output;
      e.stream = tensors[i].stream;
      e.handle = handle;
      e.index = static_cast<int>(i);
      set->add_locked(std::move(e));
    }
  }
  wake();
  return handle;
}

std::shared_ptr<HandleState> Runtime::join() {
  std::shared_ptr<HandleState> h;
  {
    std::lock_guard<std::mutex> lock(join_mu_);
    throw_if_broken();
    if (join_handle_) throw InvalidArgument("join: this rank is already joining");
    join_handle_ = h = handles_.create(1);
  }
  wake();
  return h;
}

int Runtime::wait_internal(const std::shared_ptr<HandleState>& h) {
  {
    BlockedWaiter blocked(*this, *h);
    h->wait();
  }
  int result = h->int_result();
  tandem_result_t code = h->result();
  std::string error = h->error();
  handles_.release(h->id());
  switch (code) {
    case TANDEM_SUCCESS: return result;
    case TANDEM_ERR_MISMATCH: throw MismatchError(error);
    case TANDEM_ERR_PEER_LOST: throw PeerLostError(error);
    case TANDEM_ERR_TIMEOUT: throw TimeoutError(error);
    case TANDEM_ERR_INVALID_ARGUMENT: throw InvalidArgument(error);
    default: throw AbortedError(error);
  }
}

int Runtime::add_process_set(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  if (ranks.empty()) throw InvalidArgument("add_process_set: no ranks given");
  if (std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end())
    throw InvalidArgument("add_process_set: rank " +
                          std::to_string(*std::adjacent_find(ranks.begin(), ranks.end())) +
                          " is listed twice");
  if (ranks.front() < 0 || ranks.back() >= size_)
    throw InvalidArgument("add_process_set: ranks must lie in 0.." + std::to_string(size_ - 1));
  Request q;
  q.type = OpType::kAddProcessSet;
  q.shape.assign(ranks.begin(), ranks.end());
  return negotiate_internal(std::move(q));
}

void Runtime::remove_process_set(int id) {
  if (id == TANDEM_GLOBAL_PROCESS_SET)
    throw InvalidArgument("remove_process_set: the global process set (0) cannot be removed");
  if (!find_set(id)) throw InvalidArgument("remove_process_set: process set " +
                                           std::to_string(id) + " does not exist");
  Request q;
  q.type = OpType::kRemoveProcessSet;
  q.root = id;
  negotiate_internal(std::move(q));
}

// Process set changes are negotiated on the global set like tensors, so
// that every rank applies them at the same point (run_internal).
int Runtime::negotiate_internal(Request q) {
  q.name = "tandem:process_set_op#" + std::to_string(internal_seq_++);
  auto set = find_set(TANDEM_GLOBAL_PROCESS_SET);
  std::shared_ptr<HandleState> h;
  {
    std::lock_guard<std::mutex> lock(set->mu);
    throw_if_broken();
    h = handles_.create(1);
    TensorEntry e;
    e.request = std::move(q);
    e.handle = h;
    set->add_locked(std::move(e));
  }
  wake();
  return wait_internal(h);
}

std::vector<int> Runtime::process_set_ranks(int id) const {
  auto set = find_set(id);
  if (!set) throw InvalidArgument("process set " + std::to_string(id) + " does not exist");
  return set->global_ranks();
}

std::shared_ptr<ProcessSet> Runtime::find_set(int id) const {
  std::lock_guard<std::mutex> lock(sets_mu_);
  for (const auto& s : sets_)
    if (s->id() == id) return s;
  return nullptr;
}

std::vector<std::shared_ptr<ProcessSet>> Runtime::sets_snapshot() const {
  std::lock_guard<std::mutex> lock(sets_mu_);
  return sets_;
}

// ------------------------------------------------------------------ the loop

void Runtime::loop() {
  pthread_setname_np(pthread_self(), "tandem-runtime");
  // The batching window sleeps for tens of µs; the default timer slack
  // (50 µs) would more than double that.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  // SCHED_OTHER by default: where this thread shares a core with the
  // framework (one core per rank), its wake-up must preempt the framework's
  // compute so that a step's negotiation and allreduces run while backward
  // still produces gradients; under SCHED_BATCH the peers waited for this
  // rank's time slice every step (torch and TF training 2-3x slower, bound).
  // SCHED_BATCH (TANDEM_RUNTIME_SCHEDULING=batch) only helps enqueues that
  // come back to back with no compute between them (100 x 16 KiB: ~10%).
  // Failure (a seccomp filter, say) keeps the default. Device batches run
  // under the default policy either way (DefaultScheduling below).
  if (settings_.batch_scheduling) {
    sched_param batch{};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch);
  }
  try {
    for (;;) {
      if (!wait_for_work()) {
        check_stalls();
        continue;
      }
      if (!cycle_all()) break;
    }
  } catch (const std::exception& e) {
    report(log::Level::kError, e.what(), __LINE__);
    fail_all(code_of(e), e.what());
  }
}

bool Runtime::has_pending() const {
  for (const auto& set : sets_snapshot()) {
    if (!set->member()) continue;
    std::lock_guard<std::mutex> lock(set->mu);
    if (!set->pending.empty()) return true;
  }
  std::lock_guard<std::mutex> lock(join_mu_);
  return join_handle_ != nullptr;
}

bool Runtime::has_local_work() const {
  return work_.load(std::memory_order_seq_cst) || stop_.load(std::memory_order_seq_cst) ||
         fatal_set_.load(std::memory_order_relaxed);
}

// Returns true when this rank should run a cycle now: it has work of its own
// (after the batching window), a peer asked for one, or (across nodes) the
// idle wait passed; false when it only woke to look at stalls.
bool Runtime::wait_for_work() {
  if (!has_local_work()) {
    const bool lossy = world_->wake_ups_may_be_lost();
    const bool awake = lossy && Clock::now() - last_busy_ < kStayAwake;
    if (world_->can_wake_members() && !awake) {
      // Sleep until work arrives here or a peer asks for the next cycle;
      // no empty rounds, so an idle engine costs no CPU.
      const bool waiting = has_pending();
      Clock::duration check = waiting ? Clock::duration(kPendingCheck) : kIdleCheck;
      if (settings_.stall_check_seconds > 0)
        check = std::min(check, ms(settings_.stall_check_seconds * 1000 / 4));
      if (lossy) check = std::min(check, Clock::duration(kRelayFallback));
      const bool asked = world_->wait_for_round(cycles_done_, Clock::now() + check,
                                                [this] { return has_local_work(); });
      // A peer's cycle: join it at once; a timeout with tensors waiting:
      // a cycle, so that a lost peer fails them.
      if (!has_local_work()) return asked || waiting || lossy;
    } else {
      // Across nodes without the relay (or right after a busy round, see
      // kStayAwake) peers cannot wake us: an empty round every idle wait
      // lets a peer with work proceed.
      std::unique_lock<std::mutex> lock(work_mu_);
      work_cv_.wait_for(lock, ms(settings_.idle_wait_ms), [&] { return has_local_work(); });
      if (!has_local_work()) return true;
    }
  }
  batching_window();
  std::lock_guard<std::mutex> lock(work_mu_);
  work_.store(false, std::memory_order_seq_cst);
  return true;
}

// Tensors enqueued back to back share a cycle: wait until enqueues pause
// for kQuietGap, at most TANDEM_CYCLE_TIME after the first one, or until an
// API thread blocks on a handle (it has enqueued what it had). Enqueues do
// not wake this sleep (that would cost a wake-up per tensor); it looks at
// the time of the latest one when it ends.
void Runtime::batching_window() {
  if (settings_.cycle_time_ms <= 0) return;
  std::unique_lock<std::mutex> lock(work_mu_);
  const Clock::time_point cap = first_work_ + ms(settings_.cycle_time_ms);
  in_window_.store(true, std::memory_order_seq_cst);
  auto close = [&] {
    return stop_.load() || blocked_waiters_.load(std::memory_order_seq_cst) > 0;
  };
  while (!close()) {
    const Clock::time_point last{std::chrono::duration_cast<Clock::duration>(
        std::chrono::nanoseconds(last_work_ns_.load(std::memory_order_relaxed)))};
    const auto until = std::min(cap, last + kQuietGap);
    if (Clock::now() >= until) break;
    work_cv_.wait_until(lock, until, close);
  }
  in_window_.store(false, std::memory_order_seq_cst);
}

bool Runtime::cycle_all() {
  // Peers that sleep wake for this cycle (one node); the request is the
  // same on every rank, so asking again for a cycle a peer asked for is
  // harmless.
  world_->request_round(cycles_done_ + 1, Clock::now() - last_busy_ >= kStayAwake / 2);
  ++cycles_done_;
  counters_.add(Counter::kCycles);
  timeline_.mark_cycle();
  bool shutdown_seen = false;
  for (const auto& set : sets_snapshot()) {
    if (!set->member()) continue;
    cycle(*set, &shutdown_seen);
    if (shutdown_seen) return false;
  }
  check_stalls();
  return true;
}

// A round starts in bits (cycle_message.h, BitRound): an allreduce of one
// byte per cache entry, twice, and a flag, log2(n) rounds of a few hundred
// bytes across nodes. When no member has more to say than its cache bits
// (the steady state of training: every tensor cached), that decides the
// round. Otherwise the members' messages follow in an allgather, n slots
// per rank, as every round did before (1 KiB x n per rank: 10 MiB per round
// at 10,000 nodes). Rounds of messages happen when tensors are new or
// changed, on join and shutdown, while a rank is blocked (deadlock check),
// and while a cached tensor has waited on some ranks for half the stall or
// deadlock check time (so that those can name the ranks).
bool Runtime::cycle(ProcessSet& set, bool* shutdown_seen) {
  CycleMessage mine = announce(set);
  DataPath& path = set.data_path();
  Coordinator& coordinator = set.coordinator();
  const uint64_t traffic = path.traffic_bytes();
  const size_t span = coordinator.cache().span();
  const bool full =
      full_round_needed(mine) || coordinator.wants_details(Clock::now(), details_after());
  std::vector<uint8_t> bits = encode_bit_round(mine, span, full);
  path.allreduce(bits.data(), bits.size(), TANDEM_UINT8, TANDEM_MAX, 1.0, 1.0);
  const BitRound round = decode_bit_round(bits, span);
  if (!round.full) {
    counters_.add(Counter::kNegotiationBytes, path.traffic_bytes() - traffic);
    // The same on every rank: see kStayAwake.
    for (uint64_t w : round.ready_somewhere)
      if (w != 0) {
        last_busy_ = Clock::now();
        break;
      }
    // Nobody waits (waits make a round of messages): no verdict this round.
    if (set.id() == TANDEM_GLOBAL_PROCESS_SET) deadlock_candidate_ = DeadlockVerdict{};
    std::vector<Response> responses =
        coordinator.decide_bits(round.ready_somewhere, round.missing_somewhere, Clock::now());
    execute(set, responses);
    reannounce_evicted(set);
    return true;
  }
  counters_.add(Counter::kMessageRounds);
  std::vector<Bytes> blobs = path.exchange(mine.serialize());
  counters_.add(Counter::kNegotiationBytes, path.traffic_bytes() - traffic);
  std::vector<CycleMessage> messages;
  messages.reserve(blobs.size());
  for (const Bytes& b : blobs) messages.push_back(CycleMessage::parse(b));

  std::vector<int> stopping;
  for (size_t r = 0; r < messages.size(); ++r)
    if (messages[r].shutdown) stopping.push_back(set.global_ranks()[r]);
  // The same on every rank (every rank sees every message): see kStayAwake.
  for (const CycleMessage& m : messages)
    if (!m.requests.empty() || !m.cache_bits.empty() || !m.invalid_bits.empty() || m.joined) {
      last_busy_ = Clock::now();
      break;
    }
  if (!stopping.empty()) {
    *shutdown_seen = true;
    std::ostringstream why;
    if (!fatal_.empty()) {
      fail_all(TANDEM_ERR_TIMEOUT, fatal_);
      return false;
    }
    why << "the tandem runtime stopped: rank(s) ";
    for (size_t i = 0; i < stopping.size(); ++i) why << (i ? "," : "") << stopping[i];
    why << " shut down (tandem_finalize, or a stall past TANDEM_STALL_SHUTDOWN_TIME_SECONDS; "
           "see rank 0's log)";
    fail_all(TANDEM_ERR_ABORTED, why.str());
    return false;
  }
  if (set.id() == TANDEM_GLOBAL_PROCESS_SET && deadlocked(messages)) {
    *shutdown_seen = true;
    return false;
  }
  std::vector<Response> responses = coordinator.decide(messages, Clock::now());
  execute(set, responses);
  reannounce_evicted(set);
  return true;
}

// How long a cached tensor may wait on some ranks before rounds exchange
// messages again, so that the stall warning and the deadlock check can name
// who is missing: half the shorter of the two check times (never, with
// both off).
std::chrono::steady_clock::duration Runtime::details_after() const {
  double seconds = 0;
  for (double s : {settings_.stall_check_seconds, settings_.deadlock_check_seconds})
    if (s > 0) seconds = seconds > 0 ? std::min(seconds, s) : s;
  if (seconds <= 0) return Clock::duration::max();
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds / 2));
}

bool Runtime::deadlocked(std::vector<CycleMessage>& messages) {
  std::vector<std::vector<Wait>> waits(messages.size());
  bool any = false;
  for (size_t r = 0; r < messages.size(); ++r) {
    waits[r] = std::move(messages[r].waits);
    any = any || !waits[r].empty();
  }
  DeadlockVerdict verdict = any ? find_deadlock(waits) : DeadlockVerdict{};
  // Twice in a row, from the same messages on every rank: the same answer
  // everywhere, and a thread that enqueued just after its rank's message
  // was built has been seen by the second round.
  if (verdict.found() && verdict == deadlock_candidate_) {
    if (rank_ == 0) report(log::Level::kError, verdict.message, __LINE__);
    fail_all(TANDEM_ERR_ABORTED, verdict.message);
    return true;
  }
  deadlock_candidate_ = std::move(verdict);
  return false;
}

std::vector<Wait> Runtime::describe_waits() {
  const double seconds = settings_.deadlock_check_seconds;
  if (seconds <= 0) return {};
  const auto now = Clock::now();
  const auto grace = ms(seconds * 1000);
  // Held throughout: a waiting thread leaves its wait (~BlockedWaiter) only
  // through this lock, so every handle in waited_ stays alive meanwhile.
  // (Lock order: wait_mu_, then a set's mu or join_mu_; nothing takes
  // wait_mu_ while holding those.)
  std::lock_guard<std::mutex> waits_lock(wait_mu_);
  if (waited_.empty() || now - blocked_since_ < grace) return {};
  const Clock::time_point last_enqueue{std::chrono::duration_cast<Clock::duration>(
      std::chrono::nanoseconds(last_work_ns_.load(std::memory_order_relaxed)))};
  if (now - last_enqueue < grace) return {};
  std::shared_ptr<HandleState> join;
  {
    std::lock_guard<std::mutex> lock(join_mu_);
    join = join_handle_;
  }
  const auto sets = sets_snapshot();
  std::vector<Wait> out;
  for (const auto& [h, threads] : waited_) {
    if (h->done()) return {};  // its thread is about to go on
    Wait w;
    if (join && join.get() == h) {
      w.type = Wait::kJoin;
      w.name = "join";
      for (int r : sets.front()->coordinator().not_joined())
        if (r != rank_) w.missing.push_back(r);
      out.push_back(std::move(w));
      continue;
    }
    int tensors = 0, first_index = -1;
    std::vector<int32_t> missing;
    for (const auto& set : sets) {
      if (!set->member()) continue;
      std::lock_guard<std::mutex> lock(set->mu);
      if (!set->fresh.empty()) return {};  // something to announce: not blocked
      for (const auto& [name, e] : set->pending) {
        if (e.handle.get() != h) continue;
        std::optional<std::vector<int>> m;
        if (e.announced == TensorEntry::Announced::kInFull) m = set->coordinator().missing(name);
        else if (e.announced == TensorEntry::Announced::kByBit)
          m = set->coordinator().missing_bit(e.bit);
        if (!m) return {};  // not negotiated in a round yet
        missing.insert(missing.end(), m->begin(), m->end());
        ++tensors;
        if (first_index < 0 || e.index < first_index) {
          first_index = e.index;
          w.set = set->id();
          w.type = static_cast<uint8_t>(e.request.type);
          w.name = name;
        }
      }
    }
    if (tensors == 0) return {};  // completed meanwhile
    w.more = static_cast<uint32_t>(tensors - 1);
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    w.missing = std::move(missing);
    out.push_back(std::move(w));
  }
  std::sort(out.begin(), out.end(), [](const Wait& a, const Wait& b) {
    return std::tie(a.set, a.type, a.name) < std::tie(b.set, b.type, b.name);
  });
  return out;
}

CycleMessage Runtime::announce(ProcessSet& set) {
  CycleMessage m;
  if (set.id() == TANDEM_GLOBAL_PROCESS_SET) {
    m.waits = describe_waits();
    m.shutdown = stop_ || !fatal_.empty();
    std::lock_guard<std::mutex> lock(join_mu_);
    m.joined = join_handle_ != nullptr;
  }
  const int me = set.set_rank_of(rank_);
  ResponseCache& cache = set.coordinator().cache();
  std::lock_guard<std::mutex> lock(set.mu);
  for (TensorEntry* fresh : set.fresh) {
    TensorEntry& e = *fresh;
    const std::string& name = e.request.name;
    timeline_.begin(name, "NEGOTIATE");
    ResponseCache::Lookup l = cache.lookup(e.request, me);
    if (l.state == ResponseCache::State::kHit) {
      e.announced = TensorEntry::Announced::kByBit;
      e.bit = l.bit;
      counters_.add(Counter::kCacheHits);
      continue;
    }
    if (l.state == ResponseCache::State::kStale) {
      set_bit(m.invalid_bits, l.bit);
      counters_.add(Counter::kCacheInvalidations);
    }
    e.announced = TensorEntry::Announced::kInFull;
    m.requests.push_back(e.request);
    counters_.add(Counter::kRequestsSent);
  }
  set.fresh.clear();
  for (const auto& [name, e] : set.pending)
    if (e.announced == TensorEntry::Announced::kByBit) set_bit(m.cache_bits, e.bit);
  return m;
}

void Runtime::reannounce_evicted(ProcessSet& set) {
  const int me = set.set_rank_of(rank_);
  ResponseCache& cache = set.coordinator().cache();
  std::lock_guard<std::mutex> lock(set.mu);
  for (auto& [name, e] : set.pending) {
    if (e.announced != TensorEntry::Announced::kByBit) continue;
    ResponseCache::Lookup l = cache.lookup(e.request, me);
    if (l.state == ResponseCache::State::kHit && l.bit == e.bit) continue;
    // The entry was dropped (a peer invalidated it, or it was evicted):
    // negotiate this tensor in full from the next cycle on.
    e.announced = TensorEntry::Announced::kNo;
    set.fresh.push_back(&e);
  }
}

void Runtime::execute(ProcessSet& set, std::vector<Response>& responses) {
  if (responses.empty()) return;
  counters_.add(Counter::kResponses, responses.size());
  const int me = set.set_rank_of(rank_);
  // This rank's entries, found once; the map's nodes stay put while API
  // threads add other names, and are removed only here.
  std::vector<TensorEntry*> entries(responses.size(), nullptr);
  {
    std::lock_guard<std::mutex> lock(set.mu);
    for (size_t i = 0; i < responses.size(); ++i) {
      if (responses[i].kind != Response::Kind::kTensor) continue;
      auto it = set.pending.find(responses[i].name);
      if (it != set.pending.end()) entries[i] = &it->second;
    }
  }
  // Handles done in the current batch, announced together (handle.h); also
  // when a collective throws, so that no waiter misses its wake-up. The
  // batch's entries leave the pending table first (under one lock), so that
  // a woken framework can enqueue the same names again at once.
  struct Done {
    ProcessSet& set;
    std::vector<const std::string*> names;  // of entries still in set.pending
    std::vector<std::shared_ptr<HandleState>> handles;
    void publish() {
      if (!names.empty()) {
        std::lock_guard<std::mutex> lock(set.mu);
        for (const std::string* name : names) set.pending.erase(*name);
        names.clear();
      }
      // Last enqueued first: a framework waits on its handles in the order
      // it enqueued them, so the one it sleeps on is published last and it
      // wakes once to find the rest done, instead of once per handle.
      for (auto h = handles.rbegin(); h != handles.rend(); ++h) (*h)->publish();
      handles.clear();
    }
    ~Done() { publish(); }
  } done{set, {}, {}};
  done.names.reserve(responses.size());
  auto publish = [&] { done.publish(); };
  auto finish = [&](size_t i, tandem_result_t code, const std::string& error,
                    TensorOutput out = {}, std::vector<int64_t> splits = {}, int value = -1) {
    if (!entries[i]) return;
    std::shared_ptr<HandleState> h = entries[i]->handle;
    int index = entries[i]->index;
    done.names.push_back(&responses[i].name);
    entries[i] = nullptr;
    if (!splits.empty()) h->set_received_splits(std::move(splits));
    if (value >= 0) h->set_int_result(value);
    if (h->complete_one_quietly(index, code, error, std::move(out)))
      done.handles.push_back(std::move(h));
  };
  for (size_t i = 0; i < responses.size(); ++i) {
    if (!entries[i]) continue;
    timeline_.end(responses[i].name);  // NEGOTIATE
    if (responses[i].error.empty()) timeline_.begin(responses[i].name, "QUEUE");
  }

  ExecContext ctx{set.data_path(), timeline_, counters_, me, set.global_ranks()};
  for (const Batch& b : plan_fusion(responses, settings_.fusion_threshold_bytes)) {
    publish();  // the previous batch's
    Response& lead = responses[b.members.front()];
    const size_t i0 = b.members.front();
    if (lead.kind == Response::Kind::kJoin) {
      std::shared_ptr<HandleState> h;
      {
        std::lock_guard<std::mutex> lock(join_mu_);
        h.swap(join_handle_);
      }
      if (h) {
        h->set_int_result(lead.last_joined_rank);
        h->complete_one(0, TANDEM_SUCCESS, "");
      }
      continue;
    }
    if (!lead.error.empty()) {
      counters_.add(Counter::kMismatches);
      report(log::Level::kDebug, lead.error, __LINE__);
      finish(i0, lead.error_code, lead.error);
      continue;
    }
    counters_.add(Counter::kBatches);
    if (lead.kind == Response::Kind::kTensor && lead.first().device != TANDEM_DEVICE_CPU) {
      std::vector<const Response*> members;
      std::vector<TensorEntry*> mine;
      for (size_t m : b.members) {
        members.push_back(&responses[m]);
        mine.push_back(entries[m]);
      }
      auto results = run_on_device(ctx, set.id(), members, mine);
      for (size_t k = 0; k < b.members.size(); ++k)
        finish(b.members[k], results[k].code, results[k].error, std::move(results[k].output),
               std::move(results[k].splits));
      continue;
    }
    switch (lead.type) {
      case OpType::kAllreduce: {
        std::vector<const Response*> members;
        std::vector<TensorEntry*> mine;
        for (size_t m : b.members) {
          members.push_back(&responses[m]);
          mine.push_back(entries[m]);
        }
        if (b.members.size() > 1) {
          counters_.add(Counter::kFusedBatches);
          counters_.add(Counter::kFusedTensors, b.members.size());
        }
        run_allreduce_batch(ctx, members, mine, b.bytes);
        for (size_t m : b.members) finish(m, TANDEM_SUCCESS, "");
        break;
      }
      case OpType::kBarrier:
        timeline_.end(lead.name);
        finish(i0, TANDEM_SUCCESS, "");
        break;
      case OpType::kAddProcessSet:
      case OpType::kRemoveProcessSet: {
        timeline_.end(lead.name);
        int value = -1;
        std::string error;
        try {
          run_internal(set, lead);
          value = lead.last_joined_rank;
        } catch (const InvalidArgument& e) {
          error = e.what();
        }
        finish(i0, error.empty() ? TANDEM_SUCCESS : TANDEM_ERR_INVALID_ARGUMENT, error, {}, {},
               value);
        break;
      }
      default: {
        if (!entries[i0]) break;  // (joined ranks get an error response instead)
        TensorOutput out;
        std::vector<int64_t> splits;
        run_single(ctx, lead, *entries[i0], &out, &splits);
        finish(i0, TANDEM_SUCCESS, "", std::move(out), std::move(splits));
        break;
      }
    }
  }
}

// Process set changes run on this thread, at the same point of the global
// set's order on every rank, so the data path's create() (a collective over
// the world) never interleaves with a cycle.
void Runtime::run_internal(ProcessSet& global, Response& r) {
  (void)global;
  if (r.type == OpType::kAddProcessSet) {
    std::vector<int> ranks(r.first().shape.begin(), r.first().shape.end());
    {
      std::lock_guard<std::mutex> lock(sets_mu_);
      for (const auto& s : sets_)
        if (s->global_ranks() == ranks) {
          r.last_joined_rank = s->id();
          return;
        }
    }
    auto dp = factory_->create(ranks);
    auto set = std::make_shared<ProcessSet>(next_set_id_++, ranks, std::move(dp),
                                            settings_.cache_capacity);
    r.last_joined_rank = set->id();
    std::lock_guard<std::mutex> lock(sets_mu_);
    sets_.push_back(set);
    return;
  }
  const int id = r.first().root;
  std::shared_ptr<ProcessSet> victim;
  {
    std::lock_guard<std::mutex> lock(sets_mu_);
    auto it = std::find_if(sets_.begin(), sets_.end(),
                           [&](const auto& s) { return s->id() == id; });
    if (it == sets_.end() || id == TANDEM_GLOBAL_PROCESS_SET)
      throw InvalidArgument("remove_process_set: process set " + std::to_string(id) +
                            " does not exist");
    victim = *it;
    sets_.erase(it);
  }
  if (device_) device_->remove_process_set(id);
  ProcessSet::Pending orphans;
  {
    std::lock_guard<std::mutex> lock(victim->mu);
    orphans.swap(victim->pending);
    victim->fresh.clear();
  }
  for (auto& [name, e] : orphans)
    e.handle->complete_one(e.index, TANDEM_ERR_ABORTED,
                           std::string(op_type_name(e.request.type)) + " '" + name +
                               "': process set " + std::to_string(id) + " was removed");
  r.last_joined_rank = 0;
}

void Runtime::check_stalls() {
  if (settings_.stall_check_seconds <= 0) return;
  auto now = Clock::now();
  for (const auto& set : sets_snapshot()) {
    if (!set->member() || set->set_rank_of(rank_) != 0) continue;
    auto& inspector = stall_inspectors_.try_emplace(set->id(), settings_.stall_check_seconds,
                                                    settings_.stall_shutdown_seconds)
                          .first->second;
    std::string fatal;
    for (const std::string& w : inspector.inspect(set->coordinator().pending(), now, &fatal)) {
      counters_.add(Counter::kStallWarnings);
      report(log::Level::kWarn,
             (set->id() ? "process set " + std::to_string(set->id()) + ": " : std::string()) + w,
             __LINE__);
    }
    if (!fatal.empty() && fatal_.empty()) {
      report(log::Level::kError, fatal, __LINE__);
      fatal_ = fatal;
      fatal_set_ = true;  // a cycle carries the shutdown to the other ranks
    }
  }
}

void Runtime::fail_all(tandem_result_t code, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(broken_mu_);
    if (broken_code_ == TANDEM_SUCCESS) {
      broken_code_ = code;
      broken_message_ = message;
    }
  }
  if (device_) device_->abort(message);
  for (const auto& set : sets_snapshot()) {
    ProcessSet::Pending pending;
    {
      std::lock_guard<std::mutex> lock(set->mu);
      pending.swap(set->pending);
      set->fresh.clear();
    }
    for (auto& [name, e] : pending) e.handle->complete_one(e.index, code, message);
  }
  std::shared_ptr<HandleState> join;
  {
    std::lock_guard<std::mutex> lock(join_mu_);
    join.swap(join_handle_);
  }
  if (join) join->complete_one(0, code, message);
}

namespace {
// Threads inherit their creator's scheduling policy, and NCCL and the CUDA
// runtime start their helper threads (NCCL's network proxies) from the
// thread that first calls them: this one. They must not inherit
// SCHED_BATCH, whose wake-ups never preempt: a proxy thread's are latency.
class DefaultScheduling {
 public:
  DefaultScheduling() {
    sched_param p{};
    if (pthread_getschedparam(pthread_self(), &policy_, &p) == 0 && policy_ == SCHED_BATCH) {
      sched_param normal{};
      switched_ = pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal) == 0;
    }
  }
  ~DefaultScheduling() {
    sched_param p{};
    if (switched_) pthread_setschedparam(pthread_self(), policy_, &p);
  }
  DefaultScheduling(const DefaultScheduling&) = delete;
  DefaultScheduling& operator=(const DefaultScheduling&) = delete;

 private:
  int policy_ = SCHED_OTHER;
  bool switched_ = false;
};
}  // namespace

std::vector<DevicePath::Result> Runtime::run_on_device(
    ExecContext& ctx, int set_id, const std::vector<const Response*>& responses,
    const std::vector<TensorEntry*>& entries) {
  if (device_) {
    DefaultScheduling normal;
    return device_->run(ctx, set_id, responses, entries);
  }
  // Same answer on every rank (the runtime is built the same way everywhere).
  std::vector<DevicePath::Result> out(responses.size());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].code = TANDEM_ERR_UNSUPPORTED;
    out[i].error = std::string(op_type_name(responses[i]->type)) + " '" + responses[i]->name +
                   "': device " + std::to_string(responses[i]->first().device) +
                   " is a GPU and this runtime has no GPU path; copy the tensor to the CPU";
  }
  return out;
}

}  // namespace tandem::runtime
