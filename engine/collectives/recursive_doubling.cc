// Allreduce by recursive doubling, for small messages across nodes: log2(p)
// steps, each a single exchange of the whole vector. In step k rank i and
// rank i ^ 2^k swap their partials and both combine them, lower rank's
// first, so both compute the same bits; after the last step every rank holds
// the whole result. Latency log2(p) round trips instead of the n-1 of a
// pairwise exchange; every rank sends and reduces log2(p) whole vectors, so
// it only pays while a message costs less than a round trip.
//
// The tree of each element is the same as in halving_doubling.cc: ((r0 r1)
// (r2 r3)) ((r4 r5) (r6 r7)), so the two give the same bits. Groups that are
// not a power of two fold first (steps.h).
#include "collectives/allreduce_algorithms.h"
#include "collectives/steps.h"

namespace tandem {

void allreduce_recursive_doubling(Transport& t, const void* send, void* recv, size_t count,
                                  const Reduction& r) {
  const int n = t.size();
  if (count == 0) return;
  if (n == 1) {
    const void* in[1] = {send};
    reduce(recv, in, 1, count, r);  // copy, prescale and finalize
    return;
  }
  const steps::Fold f(n, t.rank());
  steps::Start s = steps::fold_in(t, f, send, recv, count, r);
  if (!f.idle) {
    for (int m = 1; m < f.p; m <<= 1) {
      const int partner = f.index ^ m;
      const int peer = f.rank_of(partner);
      const Reduction step = steps::stage(r, s.raw, 2 * m >= f.p);
      steps::exchange_combine(t, peer, s.partial, count, peer, s.partial, recv, count,
                              partner < f.index, step, count);
      s = {recv, false};
    }
  }
  steps::fold_out(t, f, recv, count, dtype_size(r.dtype));
}

}  // namespace tandem
