#include "runtime/runtime.h"

#include <sstream>

#include "runtime/wake_up.h"

namespace tandem::runtime {

bool Runtime::cycle_all() {
  // Peers that sleep wake for this cycle (one node); the request is the
  // same on every rank, so asking again for a cycle a peer asked for is
  // harmless.
  world_->request_round(cycles_done_ + 1, Clock::now() - last_busy_ >= kStayAwake / 2);
  ++cycles_done_;
  counters_.add(Counter::kCycles);
  timeline_.mark_cycle();
  bool shutdown_seen = false;
  for (const auto& set : sets_.snapshot()) {
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
  const bool due = set.id() == TANDEM_GLOBAL_PROCESS_SET && straggler_due(mine);
  std::vector<uint8_t> bits = encode_bit_round(mine, span, full, due);
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
    const auto decided = Clock::now();
    std::vector<Response> responses =
        coordinator.decide_bits(round.ready_somewhere, round.missing_somewhere, decided);
    if (straggler_on()) note_waits(set, responses, decided);
    execute(set, responses);
    if (straggler_on()) note_ran(set, responses);
    if (autotuner_) autotune_note(responses);
    reannounce_evicted(set);
    if (round.report) exchange_straggler(set, false);
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
    // The summary at shutdown: where every member saw a report before (or
    // this round starts one), so that all of them take part; before the
    // stall check's own reason to stop, which rank 0 alone knows.
    if (set.id() == TANDEM_GLOBAL_PROCESS_SET && (round.report || straggler_reports_ > 0))
      exchange_straggler(set, true);
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
  const auto decided = Clock::now();
  std::vector<Response> responses = coordinator.decide(messages, decided);
  if (straggler_on()) note_waits(set, responses, decided);
  execute(set, responses);
  if (straggler_on()) note_ran(set, responses);
  if (autotuner_) autotune_note(responses);
  reannounce_evicted(set);
  if (set.id() == TANDEM_GLOBAL_PROCESS_SET && autotune_on()) autotune_apply(messages);
  if (round.report) exchange_straggler(set, false);
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

CycleMessage Runtime::announce(ProcessSet& set) {
  CycleMessage m;
  if (set.id() == TANDEM_GLOBAL_PROCESS_SET) {
    m.waits = describe_waits();
    m.shutdown = stop_ || !fatal_.empty();
    // Sent once: the round it goes in is the one after which every rank
    // applies it.
    m.tuning = to_send_;
    to_send_.reset();
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

void Runtime::check_stalls() {
  if (settings_.stall_check_seconds <= 0) return;
  auto now = Clock::now();
  for (const auto& set : sets_.snapshot()) {
    if (!set->member() || set->set_rank_of(rank_) != 0) continue;
    auto& inspector =
        stall_inspectors_
            .try_emplace(set->id(), settings_.stall_check_seconds, settings_.stall_shutdown_seconds)
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

}  // namespace tandem::runtime
