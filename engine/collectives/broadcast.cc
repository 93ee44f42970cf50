// broadcast() over a transport: a binomial tree, or for large messages on
// more than two ranks a scatter followed by a ring allgather (model.h).
#include "collectives/collectives.h"
#include "collectives/model.h"

namespace tandem {

// Binomial tree over ranks renumbered so that the root is 0: log2(n) rounds,
// each rank receives once and forwards to its subtree.
void broadcast_binomial(Transport& t, void* buf, size_t bytes, int root) {
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

void broadcast(Transport& t, void* buf, size_t bytes, int root) {
  if (broadcast_uses_scatter(t.size(), bytes)) broadcast_scatter_allgather(t, buf, bytes, root);
  else broadcast_binomial(t, buf, bytes, root);
}

}  // namespace tandem
