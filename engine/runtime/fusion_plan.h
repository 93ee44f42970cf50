// Fusion planning: which ready allreduces share one buffer and one
// collective. Small tensors are dominated by per-collective latency, so
// allreduces with the same dtype, device, reduce op and scale factors are
// packed back to back into the fusion buffer up to the threshold, reduced
// once and unpacked.
//
// The plan is greedy with look-ahead, as in Horovod: starting from the first
// unplanned response, later compatible responses join its batch while they
// fit, so an unrelated tensor in between does not cut a batch short. It is
// computed from data every rank holds identically, so every rank builds the
// same batches in the same order. A tensor larger than the threshold runs
// alone; a threshold of 0 turns fusion off.
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/response.h"

namespace tandem::runtime {

struct Batch {
  std::vector<size_t> members;  // indices into the response list, in order
  size_t bytes = 0;             // total payload of the members
};

std::vector<Batch> plan_fusion(const std::vector<Response>& responses, size_t threshold_bytes);

}  // namespace tandem::runtime
