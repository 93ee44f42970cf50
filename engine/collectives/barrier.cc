#include "collectives/collectives.h"

namespace tandem {

// Dissemination barrier: ceil(log2 n) rounds of one-byte exchanges.
void barrier(Transport& t) {
  const int n = t.size(), me = t.rank();
  for (int d = 1; d < n; d <<= 1) {
    char out = 1, in = 0;
    t.sendrecv((me + d) % n, &out, 1, (me - d + n) % n, &in, 1);
  }
}

}  // namespace tandem
