// Broadcast by a scatter and an allgather (van de Geijn), for large
// messages: the buffer is cut into n blocks, one per rank counted from the
// root; a binomial tree scatters them (each rank receives its subtree's
// blocks, a contiguous range, from its parent, and passes the subtrees
// below it on), then a ring passes every block around. The root's bytes
// cross about two links' worth of time in all instead of the whole message
// on each of log2(n) rounds of a binomial tree.
#include <algorithm>

#include "collectives/collectives.h"

namespace tandem {

void broadcast_scatter_allgather(Transport& t, void* buf, size_t bytes, int root) {
  const int n = t.size(), me = t.rank();
  if (n == 1 || bytes == 0) return;
  char* data = static_cast<char*>(buf);
  // Block of virtual rank v (counted from the root): whole 64-byte lines.
  const size_t per = ((bytes + n - 1) / n + 63) / 64 * 64;
  auto at = [&](int v) { return std::min(bytes, per * static_cast<size_t>(v)); };
  auto range = [&](int lo, int hi) { return at(std::min(hi, n)) - at(lo); };
  const int vr = (me - root + n) % n;
  int mask = 1;
  while (mask < n) {
    if (vr & mask) {
      t.recv((vr - mask + root) % n, data + at(vr), range(vr, vr + mask));
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (vr + mask < n)
      t.send((vr + mask + root) % n, data + at(vr + mask), range(vr + mask, vr + 2 * mask));
  const int next = (me + 1) % n, prev = (me - 1 + n) % n;
  for (int s = 0; s < n - 1; ++s) {
    const int give = (vr - s + n) % n, take = (vr - s - 1 + n) % n;
    t.sendrecv(next, data + at(give), range(give, give + 1), prev, data + at(take),
               range(take, take + 1));
  }
}

}  // namespace tandem
