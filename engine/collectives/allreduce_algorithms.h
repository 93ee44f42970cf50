// The allreduce algorithms across nodes (one file each) and how allreduce()
// picks one: by an alpha-beta model of the link, from the message size and
// the number of ranks (docs/engine.md has the model, its constants and what
// it predicts for 1,000 nodes).
//
// Every algorithm gives bitwise identical results on every rank, combines
// every element along a tree fixed by the group size alone (never by
// timing), and takes send == recv for in place.
#pragma once

#include <cstddef>
#include <string>

#include "collectives/reduce.h"
#include "transport/transport.h"

namespace tandem {

enum class AllreduceAlgorithm {
  kAuto,               // the model's choice for this size and group
  kRecursiveDoubling,  // recursive_doubling.cc: small messages
  kHalvingDoubling,    // halving_doubling.cc: medium and large, power-of-two groups
  kRing,               // ring.cc: large, any group
};

void allreduce_recursive_doubling(Transport& t, const void* send, void* recv, size_t count,
                                  const Reduction& r);
void allreduce_halving_doubling(Transport& t, const void* send, void* recv, size_t count,
                                const Reduction& r);
void allreduce_ring(Transport& t, const void* send, void* recv, size_t count, const Reduction& r);

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

const char* algorithm_name(AllreduceAlgorithm a);

// TANDEM_ALLREDUCE_ALGORITHM: auto (default), recursive_doubling,
// halving_doubling or ring. Forces the algorithm across nodes for tests and
// benchmarks; must be the same on every rank. Anything else is an
// InvalidArgument naming the variable and the choices.
constexpr const char* kAllreduceAlgorithmVariable = "TANDEM_ALLREDUCE_ALGORITHM";
AllreduceAlgorithm parse_allreduce_algorithm(const std::string& name);
AllreduceAlgorithm allreduce_algorithm_from_environment();

}  // namespace tandem
