// Runtime counters: how often each path was taken. Read by tests (to see
// that the cache or fusion was used) and through tandem_runtime_counter().
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tandem::runtime {

enum class Counter {
  kCycles,        // negotiation rounds (all process sets)
  kRequestsSent,  // tensors announced with a full request
  kCacheHits,     // tensors announced through a cache bit
  kCacheInvalidations,
  kResponses,     // tensors that ran (or failed) after negotiation
  kBatches,       // collectives run for tensors
  kFusedBatches,  // batches holding more than one tensor
  kFusedTensors,  // tensors that ran inside such a batch
  kMismatches,    // tensors failed because ranks disagreed
  kStallWarnings,
  kMessageRounds,     // rounds that exchanged the members' messages (not only bits)
  kNegotiationBytes,  // bytes sent and received across nodes by negotiation rounds
  kCount_
};

const char* counter_name(Counter c);

class Counters {
 public:
  void add(Counter c, uint64_t n = 1) { v_[static_cast<size_t>(c)].fetch_add(n); }
  uint64_t get(Counter c) const { return v_[static_cast<size_t>(c)].load(); }

 private:
  std::array<std::atomic<uint64_t>, static_cast<size_t>(Counter::kCount_)> v_{};
};

}  // namespace tandem::runtime
