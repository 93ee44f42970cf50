// Request validation: what an enqueue call is checked for before anything
// is queued, on the calling (API) thread. Every message names the operation
// and the tensor, what was expected and what was found, so that a bad call
// fails at once on the rank that made it (InvalidArgument,
// DuplicateNameError) instead of reaching the negotiation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/process_set.h"
#include "runtime/request.h"
#include "tandem/tandem.h"

namespace tandem::runtime {

// One tensor of an enqueue call, already in C++ form.
struct TensorArg {
  std::string name;
  const void* input = nullptr;
  void* output = nullptr;
  int dtype = TANDEM_FLOAT32;
  int device = TANDEM_DEVICE_CPU;
  std::vector<int64_t> shape;
  void* stream = nullptr;  // device tensors: cudaStream_t to order after (NULL: default)
};

struct OpArgs {
  OpType type = OpType::kAllreduce;
  int op = TANDEM_SUM;
  double prescale = 1.0;
  double postscale = 1.0;
  int root = -1;                // broadcast: global rank
  std::vector<int64_t> splits;  // alltoall; empty: equal parts
  int process_set = TANDEM_GLOBAL_PROCESS_SET;
};

// The requests of one call on `set` (of which `rank` is a member), one per
// tensor, in order. Throws InvalidArgument naming the tensor and the problem.
std::vector<Request> make_requests(const std::vector<TensorArg>& tensors, const OpArgs& args,
                                   const ProcessSet& set, int rank);

// Throws DuplicateNameError when two of `requests` share a name or one is
// still in flight in `set` (set.mu held by the caller).
void check_names_free(const std::vector<Request>& requests, const ProcessSet& set);

}  // namespace tandem::runtime
