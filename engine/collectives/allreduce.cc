// allreduce() over a transport: picks the algorithm (choose_allreduce, by
// the cost model of collectives/model.h) and runs it. The algorithms live
// one per file.
#include "collectives/allreduce_algorithms.h"
#include "collectives/model.h"
#include "collectives/collectives.h"

namespace tandem {

void allreduce(Transport& t, const void* send, void* recv, size_t count, const Reduction& r,
               AllreduceAlgorithm algorithm) {
  if (algorithm == AllreduceAlgorithm::kAuto)
    algorithm = choose_allreduce(t.size(), count * dtype_size(r.dtype));
  switch (algorithm) {
    case AllreduceAlgorithm::kRecursiveDoubling:
      return allreduce_recursive_doubling(t, send, recv, count, r);
    case AllreduceAlgorithm::kRing: return allreduce_ring(t, send, recv, count, r);
    case AllreduceAlgorithm::kHalvingDoubling:
    case AllreduceAlgorithm::kAuto: break;
  }
  allreduce_halving_doubling(t, send, recv, count, r);
}

void allreduce(Transport& t, void* buf, size_t count, const Reduction& r,
               AllreduceAlgorithm algorithm) {
  allreduce(t, buf, buf, count, r, algorithm);
}

}  // namespace tandem
