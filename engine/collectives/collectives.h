// Collective algorithms over the abstract Transport (one file each). They
// never see a concrete transport: the Communicator runs them over TCP between
// nodes, the unit tests over the memory transport. Sizes are in bytes except
// where a Reduction gives the element type. Every rank of the transport's
// group calls the same algorithm with the same sizes.
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/reduce.h"
#include "transport/transport.h"

namespace tandem {

// In place. Direct reduce-scatter (rank j gathers every rank's part j and
// reduces it in rank order) followed by an allgather of the parts; small
// messages: every rank gathers every vector and reduces in rank order.
// Either way results are bitwise identical on every rank and independent of
// timing.
void allreduce(Transport& t, void* buf, size_t count, const Reduction& r);
// The same out of place (recv == send is in place; no other overlap).
void allreduce(Transport& t, const void* send, void* recv, size_t count, const Reduction& r);

// Up to this many bytes sent per rank ((n-1) x the message), allreduce
// exchanges whole vectors instead: one round trip per peer, not two.
constexpr size_t kExchangeAllBytes = size_t{256} << 10;

// reducescatter exchanges and reduces in pieces of at most this many bytes
// per part, so its scratch is bounded and reused (1 MiB: large enough that a
// piece's round trip costs little next to its transfer on TCP).
constexpr size_t kPieceBytes = size_t{1} << 20;

// counts[j] elements of the reduced send go to rank j, in rank order. recv
// may be send's own part (in place); no other overlap.
void reducescatter(Transport& t, const void* send, void* recv, const std::vector<size_t>& counts,
                   const Reduction& r);

void broadcast(Transport& t, void* buf, size_t bytes, int root);

// bytes[j] from rank j, packed in rank order into recv; recv may hold this
// rank's block already (send == recv + offset).
void allgatherv(Transport& t, const void* send, void* recv, const std::vector<size_t>& bytes);

void alltoallv(Transport& t, const void* send, const std::vector<size_t>& send_bytes, void* recv,
               const std::vector<size_t>& recv_bytes);

void barrier(Transport& t);

}  // namespace tandem
