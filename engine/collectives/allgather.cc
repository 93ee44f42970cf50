// allgatherv() over a transport: Bruck's algorithm (bruck.cc) while the
// rounds cost more than copying the result once (model.h), else a ring, in
// place.
#include <cstring>

#include "collectives/collectives.h"
#include "collectives/model.h"

namespace tandem {

// A ring: in round s rank i passes block i-s on to i+1 and receives block
// i-s-1 from i-1, so every block travels once around; n-1 rounds, each
// link carrying one block per round, like n-1 pairwise rounds, but with
// two neighbours instead of every rank (partners.h: a transport connects
// O(log n) peers, not n-1).
void allgatherv_ring(Transport& t, const void* send, void* recv, const std::vector<size_t>& bytes) {
  const int n = t.size(), me = t.rank();
  std::vector<size_t> at(n, 0);
  for (int j = 1; j < n; ++j) at[j] = at[j - 1] + bytes[j - 1];
  char* out = static_cast<char*>(recv);
  if (out + at[me] != send && bytes[me]) std::memmove(out + at[me], send, bytes[me]);
  const int next = (me + 1) % n, prev = (me - 1 + n) % n;
  for (int s = 0; s < n - 1; ++s) {
    const int give = (me - s + n) % n, take = (me - s - 1 + n) % n;
    t.sendrecv(next, out + at[give], bytes[give], prev, out + at[take], bytes[take]);
  }
}

void allgatherv(Transport& t, const void* send, void* recv, const std::vector<size_t>& bytes) {
  size_t total = 0;
  for (size_t b : bytes) total += b;
  if (allgather_uses_bruck(t.size(), total)) allgatherv_bruck(t, send, recv, bytes);
  else allgatherv_ring(t, send, recv, bytes);
}

}  // namespace tandem
