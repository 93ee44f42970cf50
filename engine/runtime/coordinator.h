// Negotiation for one process set. Every cycle each member contributes a
// CycleMessage; every member then feeds all of them, in set-rank order, to
// its Coordinator. The coordinators of all members hold the same state and
// make the same decisions, so all ranks run the same operations in the same
// order. (Horovod gathers requests on rank 0 and broadcasts its decision;
// the allgather here does the same in one round trip, and each rank already
// holds every rank's request when it builds error messages and buffers.)
//
// A tensor is ready when every member that has not joined has asked for it.
// Ready tensors come out in a fixed order: first those agreed through the
// cache, by bit position, then the others in the order the first request for
// each arrived. Before a tensor runs its requests are compared; a
// disagreement becomes an error response naming the tensor, the field and
// the ranks with each value.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cycle_message.h"
#include "runtime/response.h"
#include "runtime/response_cache.h"

namespace tandem::runtime {

class Coordinator {
 public:
  using Clock = std::chrono::steady_clock;

  // global_ranks: the set's members by set rank.
  Coordinator(std::vector<int> global_ranks, size_t cache_capacity);

  // Consumes one cycle's messages (indexed by set rank) and returns what to
  // run now, in order.
  std::vector<Response> decide(const std::vector<CycleMessage>& messages, Clock::time_point now);
  // The same for a round of bits only (cycle_message.h, BitRound): no
  // member had more to say than its cache bits, so nobody joined and
  // nothing was requested or invalidated; the ORs of the ready bits and of
  // their negations decide which cached entries run. Which members hold an
  // entry that is ready on some but not all is unknown after such a round
  // (pending() leaves it out, missing_bit() has no answer) until a round
  // of messages.
  std::vector<Response> decide_bits(const std::vector<uint64_t>& ready_somewhere,
                                    const std::vector<uint64_t>& missing_somewhere,
                                    Clock::time_point now);
  // Whether a cached entry has been ready on some members but not on all
  // for `after` or longer: then rounds exchange messages, so that the stall
  // warning and the deadlock check can name the ranks. A step's tensors
  // meet within milliseconds, so only a stall costs the O(n) rounds.
  bool wants_details(Clock::time_point now, Clock::duration after) const;

  ResponseCache& cache() { return cache_; }
  // Autotune's switch of the cache (ResponseCache::set_enabled), with what
  // this coordinator kept about its entries.
  void set_cache_enabled(bool on);
  const ResponseCache& cache() const { return cache_; }
  bool joined(int set_rank) const { return joined_[set_rank]; }
  int size() const { return static_cast<int>(global_ranks_.size()); }

  // Tensors some members asked for and others not yet, for the stall check.
  struct Pending {
    std::string name;
    OpType type;
    std::vector<int> have;     // global ranks that asked
    std::vector<int> missing;  // global ranks that did not (and have not joined)
    Clock::time_point since;   // first request seen
  };
  std::vector<Pending> pending() const;

  // For the deadlock check (deadlock.h): the global ranks that have not yet
  // asked for the tensor this rank announced in full as `name` (or by cache
  // `bit`) and have not joined; nullopt when there is no record of it (not
  // negotiated in a round yet, or ready and about to run).
  std::optional<std::vector<int>> missing(const std::string& name) const;
  std::optional<std::vector<int>> missing_bit(size_t bit) const;
  // Global ranks that have not joined (for a rank that waits in join).
  std::vector<int> not_joined() const;

 private:
  struct TableEntry {
    std::vector<std::optional<Request>> per_rank;
    Clock::time_point since;
    uint64_t arrival = 0;
  };
  void apply_invalidations(const std::vector<CycleMessage>& messages);
  void update_joins(const std::vector<CycleMessage>& messages);
  void take_cached(const std::vector<CycleMessage>& messages, Clock::time_point now,
                   std::vector<Response>& out);
  void take_table(std::vector<Response>& out);
  bool ready(const std::vector<std::optional<Request>>& per_rank) const;
  Response make_response(const std::string& name, std::vector<std::optional<Request>> per_rank);
  std::string check(const Response& r) const;
  std::string ranks_string(const std::vector<int>& set_ranks) const;

  std::vector<int> global_ranks_;
  ResponseCache cache_;
  std::map<std::string, TableEntry> table_;
  uint64_t arrivals_ = 0;
  std::vector<bool> joined_;
  std::vector<uint64_t> join_order_;  // when each rank joined (cycle number)
  uint64_t cycle_ = 0;
  // Cached entries set by some ranks but not all: first seen and who has it
  // (empty after a round of bits: unknown).
  struct PartialBit {
    Clock::time_point since;
    std::vector<bool> have;
  };
  Response cached_response(size_t bit, const ResponseCache::Requests& per_rank,
                           std::vector<bool> present);
  std::map<size_t, PartialBit> partial_bits_;
};

}  // namespace tandem::runtime
