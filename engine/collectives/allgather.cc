// allgatherv() over a transport: Bruck's algorithm (bruck.cc) while the
// rounds cost more than copying the result once (model.h), else pairwise
// rounds, in place.
#include <cstring>

#include "collectives/collectives.h"
#include "collectives/model.h"

namespace tandem {

// Pairwise rounds: in round k rank i sends its block to i+k and receives the
// block of i-k, so every link carries one block per round; n-1 rounds.
void allgatherv_pairwise(Transport& t, const void* send, void* recv,
                         const std::vector<size_t>& bytes) {
  const int n = t.size(), me = t.rank();
  std::vector<size_t> at(n, 0);
  for (int j = 1; j < n; ++j) at[j] = at[j - 1] + bytes[j - 1];
  char* out = static_cast<char*>(recv);
  if (out + at[me] != send && bytes[me]) std::memmove(out + at[me], send, bytes[me]);
  for (int k = 1; k < n; ++k) {
    const int to = (me + k) % n, from = (me - k + n) % n;
    t.sendrecv(to, out + at[me], bytes[me], from, out + at[from], bytes[from]);
  }
}

void allgatherv(Transport& t, const void* send, void* recv, const std::vector<size_t>& bytes) {
  size_t total = 0;
  for (size_t b : bytes) total += b;
  if (allgather_uses_bruck(t.size(), total))
    allgatherv_bruck(t, send, recv, bytes);
  else
    allgatherv_pairwise(t, send, recv, bytes);
}

}  // namespace tandem
