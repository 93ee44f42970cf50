#include <cstring>

#include "collectives/collectives.h"

namespace tandem {

// Pairwise rounds: in round k rank i sends its block to i+k and receives the
// block of i-k, so every link carries one block per round.
void allgatherv(Transport& t, const void* send, void* recv, const std::vector<size_t>& bytes) {
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

}  // namespace tandem
