// The allreduce algorithms across nodes (one file each). allreduce()
// (collectives.h) picks one by the alpha-beta model of model.h, from the
// message size and the number of ranks, unless one is forced.
//
// Every algorithm gives bitwise identical results on every rank, combines
// every element along a tree fixed by the group size alone (never by
// timing), and takes send == recv for in place.
#pragma once

#include <cstddef>
#include <string>

#include "common/reduce.h"
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

const char* algorithm_name(AllreduceAlgorithm a);

// TANDEM_ALLREDUCE_ALGORITHM: auto (default), recursive_doubling,
// halving_doubling or ring. Forces the algorithm across nodes for tests and
// benchmarks; must be the same on every rank. Anything else is an
// InvalidArgument naming the variable and the choices.
constexpr const char* kAllreduceAlgorithmVariable = "TANDEM_ALLREDUCE_ALGORITHM";
AllreduceAlgorithm parse_allreduce_algorithm(const std::string& name);
AllreduceAlgorithm allreduce_algorithm_from_environment();

}  // namespace tandem
