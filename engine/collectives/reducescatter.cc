#include <algorithm>
#include <memory>

#include "collectives/collectives.h"
#include "collectives/steps.h"

namespace tandem {

// Direct: in rounds of at most a piece (steps.h) per part, every rank
// exchanges the round's piece of every part pairwise, then reduces the
// piece of its own part in rank order. The scratch is (n-1) pieces for the
// round, so a 256 MiB reducescatter neither allocates nor page-faults half
// of it per call, and the piece being reduced is still in cache.
void reducescatter(Transport& t, const void* send, void* recv, const std::vector<size_t>& counts,
                   const Reduction& r) {
  const int n = t.size(), me = t.rank();
  const size_t es = dtype_size(r.dtype);
  std::vector<size_t> at(n, 0);
  for (int j = 1; j < n; ++j) at[j] = at[j - 1] + counts[j - 1];
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  const size_t piece = std::max<size_t>(1, steps::kPieceBytes / es);  // elements
  size_t rounds = 0;  // the same on every rank: every rank knows every count
  for (int j = 0; j < n; ++j) rounds = std::max(rounds, (counts[j] + piece - 1) / piece);
  const size_t mine_max = std::min(piece, counts[me]);
  std::unique_ptr<char[]> scratch(new char[std::max<size_t>(1, mine_max * es * (n - 1))]);
  std::vector<const void*> parts(n);
  for (size_t k = 0; k < rounds; ++k) {
    const size_t lo = k * piece;
    auto span = [&](int j) { return counts[j] > lo ? std::min(piece, counts[j] - lo) : size_t{0}; };
    const size_t m = span(me);
    for (int step = 1; step < n; ++step) {
      const int to = (me + step) % n, from = (me - step + n) % n;
      char* slot = scratch.get() + static_cast<size_t>(step - 1) * mine_max * es;
      t.sendrecv(to, in + (at[to] + lo) * es, span(to) * es, from, slot, m * es);
      parts[from] = slot;
    }
    if (m == 0) continue;
    parts[me] = in + (at[me] + lo) * es;
    reduce(out + lo * es, parts.data(), n, m, r);
  }
}

}  // namespace tandem
