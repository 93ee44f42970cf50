// The alpha-beta model behind every choice of algorithm across nodes: which
// allreduce (allreduce_algorithms.h), whether allgather takes Bruck's
// log2(n) rounds, whether broadcast scatters first. docs/engine.md has the
// model, its constants and what it predicts for 1,000 nodes.
#pragma once

#include <cstddef>

#include "collectives/allreduce_algorithms.h"

namespace tandem {

// The link as the model sees it: a sendrecv of b bytes each way costs
// alpha + b * beta, combining b bytes costs b * gamma.
struct LinkModel {
  double alpha = 0;  // seconds
  double beta = 0;   // seconds per byte, one direction
  double gamma = 0;  // seconds per byte combined
};
// Measured between two namespace nodes of the local cluster (docs/engine.md).
LinkModel measured_link();

// Predicted seconds of one algorithm (not kAuto) on n ranks for `bytes`.
double predicted_seconds(AllreduceAlgorithm a, int n, size_t bytes, const LinkModel& link);
// The fastest by the model; never kAuto.
AllreduceAlgorithm choose_allreduce(int n, size_t bytes, const LinkModel& link = measured_link());

// allgather of `total` bytes in all over n ranks: Bruck's ceil(log2 n)
// rounds (through a scratch copy) rather than a ring's n-1 (in place).
bool allgather_uses_bruck(int n, size_t total, const LinkModel& link = measured_link());
// broadcast of `bytes` over n ranks: scatter + ring allgather (the root's
// bytes cross each link about twice) rather than a binomial tree (the whole
// message log2(n) times along the critical path).
bool broadcast_uses_scatter(int n, size_t bytes, const LinkModel& link = measured_link());

}  // namespace tandem
