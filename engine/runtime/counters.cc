#include "runtime/counters.h"

namespace tandem::runtime {

const char* counter_name(Counter c) {
  switch (c) {
    case Counter::kCycles: return "cycles";
    case Counter::kRequestsSent: return "requests_sent";
    case Counter::kCacheHits: return "cache_hits";
    case Counter::kCacheInvalidations: return "cache_invalidations";
    case Counter::kResponses: return "responses";
    case Counter::kBatches: return "batches";
    case Counter::kFusedBatches: return "fused_batches";
    case Counter::kFusedTensors: return "fused_tensors";
    case Counter::kMismatches: return "mismatches";
    case Counter::kStallWarnings: return "stall_warnings";
    case Counter::kMessageRounds: return "message_rounds";
    case Counter::kNegotiationBytes: return "negotiation_bytes";
    case Counter::kCount_: break;
  }
  return nullptr;
}

}  // namespace tandem::runtime
