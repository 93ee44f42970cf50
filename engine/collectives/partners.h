// Which peers the algorithms of this folder exchange with, so that a
// transport connects only those (O(log n) sockets per rank instead of n-1).
//
// Over a group of n, rank i talks to
//   - i +- 2^k (mod n): Bruck's allgather, the dissemination barrier, the
//     binomial tree of broadcast and of the scatter in scatter_allgather.cc
//     (for any root: the tree is the same up to rotation, so its edges are
//     the differences 2^k), and, with k = 0, the ring neighbours of the ring
//     allreduce, the ring allgather and the scatter's allgather;
//   - the partners of recursive doubling and halving-doubling: its fold
//     partner (i +- 1) and rank_of(index ^ 2^k) of the power-of-two
//     algorithm (steps.h). In a power-of-two group these are i +- 2^k
//     already; after a fold they are not.
// The relation is symmetric (j is in partners(i) exactly when i is in
// partners(j)), so both ends of every pair plan the same connection.
// Not covered: alltoall(v) and the direct reducescatter, which exchange
// with every rank; a transport connects those peers on first use.
#pragma once

#include <vector>

namespace tandem {

// Group ranks `me` exchanges with in any algorithm above, ascending, without
// `me`; empty for n == 1. At most 3 ceil(log2 n) entries.
std::vector<int> algorithm_partners(int me, int n);

}  // namespace tandem
