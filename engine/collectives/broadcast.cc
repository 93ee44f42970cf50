#include "collectives/collectives.h"

namespace tandem {

// Binomial tree over ranks renumbered so that the root is 0: log2(n) rounds,
// each rank receives once and forwards to its subtree.
void broadcast(Transport& t, void* buf, size_t bytes, int root) {
  const int n = t.size();
  if (n == 1 || bytes == 0) return;
  const int vr = (t.rank() - root + n) % n;
  int mask = 1;
  while (mask < n) {
    if (vr & mask) {
      t.recv((vr - mask + root) % n, buf, bytes);
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (vr + mask < n) t.send((vr + mask + root) % n, buf, bytes);
}

}  // namespace tandem
