// Runs what negotiation decided, on this rank: packs a batch of allreduces
// into the fusion buffer, reduces it in one collective and unpacks it; runs
// broadcast, allgather, alltoall and reducescatter one tensor at a time,
// sizing engine-allocated outputs from every rank's request.
//
// A rank that joined has no entry for a tensor the others reduce: it
// contributes the identity of the reduce op (0 for sum, 1 for product,
// +inf for min, ...) so that it changes nothing.
#pragma once

#include <vector>

#include "runtime/counters.h"
#include "runtime/data_path.h"
#include "runtime/handle.h"
#include "runtime/process_set.h"
#include "runtime/response.h"
#include "runtime/timeline.h"

namespace tandem::runtime {

struct ExecContext {
  DataPath& data_path;
  Timeline& timeline;
  Counters& counters;
  int set_rank;                     // this rank in the set
  const std::vector<int>& members;  // global ranks by set rank
};

// entries[i] is this rank's entry for responses[i], or nullptr. Fills
// outputs[i] for engine-allocated results and splits for alltoall.
void run_allreduce_batch(ExecContext& ctx, const std::vector<const Response*>& responses,
                         const std::vector<TensorEntry*>& entries, size_t total_bytes);
void run_single(ExecContext& ctx, const Response& response, TensorEntry& entry,
                TensorOutput* output, std::vector<int64_t>* received_splits);

// Fills `count` elements at dst with the identity of op for dtype.
void fill_identity(void* dst, size_t count, int dtype, int op);

}  // namespace tandem::runtime
