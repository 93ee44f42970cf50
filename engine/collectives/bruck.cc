// Allgather by Bruck's algorithm: ceil(log2 n) rounds for any n. Each rank
// keeps the blocks it has in rotated order (its own first, then those of
// the ranks after it); in round k (distance d = 2^k) it sends the first
// min(d, n-d) of them to rank i - d and receives as many from rank i + d,
// which are exactly the next ones in its order. A last copy puts the blocks
// in rank order. The runtime's negotiation gathers a small slot from every
// rank each cycle: across 1,000 nodes that is 10 rounds instead of 999.
#include <algorithm>
#include <cstring>
#include <memory>

#include "collectives/collectives.h"

namespace tandem {

void allgatherv_bruck(Transport& t, const void* send, void* recv,
                      const std::vector<size_t>& bytes) {
  const int n = t.size(), me = t.rank();
  std::vector<size_t> rot(n + 1, 0);  // rot[k]: offset of the k-th block in rotated order
  for (int k = 0; k < n; ++k) rot[k + 1] = rot[k] + bytes[(me + k) % n];
  const size_t total = rot[n];
  if (total == 0) return;
  std::unique_ptr<char[]> tmp(new char[total]);
  if (bytes[me]) std::memcpy(tmp.get(), send, bytes[me]);
  for (int d = 1; d < n; d <<= 1) {
    const int cnt = std::min(d, n - d);
    t.sendrecv((me - d + n) % n, tmp.get(), rot[cnt], (me + d) % n, tmp.get() + rot[d],
               rot[d + cnt] - rot[d]);
  }
  // Rotated positions 0..n-1-me are ranks me..n-1, the rest ranks 0..me-1.
  char* out = static_cast<char*>(recv);
  size_t at_me = 0;
  for (int j = 0; j < me; ++j) at_me += bytes[j];
  const size_t upper = rot[n - me];
  std::memcpy(out + at_me, tmp.get(), upper);
  std::memcpy(out, tmp.get() + upper, total - upper);
}

}  // namespace tandem
