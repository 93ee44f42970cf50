// Collective algorithms over the abstract Transport (one file each). They
// never see a concrete transport: the Communicator runs them over TCP between
// nodes, the unit tests over the memory transport. Sizes are in bytes except
// where a Reduction gives the element type. Every rank of the transport's
// group calls the same algorithm with the same sizes.
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/allreduce_algorithms.h"
#include "common/reduce.h"
#include "transport/transport.h"

namespace tandem {

// Out of place (recv == send is in place; no other overlap): the
// algorithm of allreduce_algorithms.h that the model picks for this size
// and group, unless one is forced. Results are bitwise identical on every
// rank and independent of timing.
void allreduce(Transport& t, const void* send, void* recv, size_t count, const Reduction& r,
               AllreduceAlgorithm algorithm = AllreduceAlgorithm::kAuto);
void allreduce(Transport& t, void* buf, size_t count, const Reduction& r,
               AllreduceAlgorithm algorithm = AllreduceAlgorithm::kAuto);

// Adasum (adasum.cc), in place: buf packs tensors of counts[k] elements,
// each combined with coefficients of its own. InvalidArgument unless the
// group is a power of two and dtype floating.
void allreduce_adasum(Transport& t, void* buf, const std::vector<size_t>& counts,
                      tandem_dtype_t dtype);

// counts[j] elements of the reduced send go to rank j, in rank order. recv
// may be send's own part (in place); no other overlap.
void reducescatter(Transport& t, const void* send, void* recv, const std::vector<size_t>& counts,
                   const Reduction& r);

// The algorithm the model picks (model.h), or one named.
void broadcast(Transport& t, void* buf, size_t bytes, int root);
void broadcast_binomial(Transport& t, void* buf, size_t bytes, int root);
void broadcast_scatter_allgather(Transport& t, void* buf, size_t bytes, int root);

// bytes[j] from rank j, packed in rank order into recv; recv may hold this
// rank's block already (send == recv + offset). The algorithm the model
// picks (model.h), or one named.
void allgatherv(Transport& t, const void* send, void* recv, const std::vector<size_t>& bytes);
void allgatherv_ring(Transport& t, const void* send, void* recv, const std::vector<size_t>& bytes);
void allgatherv_bruck(Transport& t, const void* send, void* recv, const std::vector<size_t>& bytes);

void alltoallv(Transport& t, const void* send, const std::vector<size_t>& send_bytes, void* recv,
               const std::vector<size_t>& recv_bytes);

void barrier(Transport& t);

}  // namespace tandem
