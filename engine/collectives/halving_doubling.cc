// Allreduce by recursive halving and doubling (Rabenseifner's algorithm),
// for medium and large messages across nodes when the group is a power of
// two (others fold first: steps.h). A reduce-scatter by recursive halving:
// in step k rank i and rank i ^ 2^k split their current range of blocks in
// two, each sends the half it gives up and combines the half it keeps (lower
// rank's partial first); after log2(p) steps each rank holds one block
// reduced over every rank. Then an allgather by recursive doubling replays
// the steps backwards, each rank sending what it holds and receiving its
// partner's half into place. Every rank sends 2 (p-1)/p of the vector in all,
// like a ring, in 2 log2(p) steps instead of 2 (p-1).
//
// Each element is reduced along the same tree as in recursive_doubling.cc
// (pairs first, then pairs of pairs), so the two give the same bits.
#include "collectives/allreduce_algorithms.h"
#include "collectives/steps.h"

#include <algorithm>

namespace tandem {

void allreduce_halving_doubling(Transport& t, const void* send, void* recv, size_t count,
                                const Reduction& r) {
  const int n = t.size();
  if (count == 0) return;
  if (n == 1) {
    const void* in[1] = {send};
    reduce(recv, in, 1, count, r);
    return;
  }
  const size_t es = dtype_size(r.dtype);
  const steps::Fold f(n, t.rank());
  steps::Start s = steps::fold_in(t, f, send, recv, count, r);
  if (!f.idle) {
    const steps::Blocks b(count, es, f.p);
    char* out = static_cast<char*>(recv);
    struct Split {
      int peer, keep_lo, keep_hi, give_lo, give_hi;
    };
    Split split[32];
    int depth = 0;
    int lo = 0, hi = f.p;
    for (int m = 1; m < f.p; m <<= 1, ++depth) {
      const int partner = f.index ^ m;
      const int mid = (lo + hi) / 2;
      const bool lower = partner > f.index;
      Split& x = split[depth];
      x = {f.rank_of(partner), lower ? lo : mid, lower ? mid : hi, lower ? mid : lo,
           lower ? hi : mid};
      const char* partial = static_cast<const char*>(s.partial);
      const size_t give = b.span(x.give_lo, x.give_hi), keep = b.span(x.keep_lo, x.keep_hi);
      steps::exchange_combine(t, x.peer, partial + b.at(x.give_lo) * es, give, x.peer,
                              partial + b.at(x.keep_lo) * es, out + b.at(x.keep_lo) * es, keep,
                              !lower, steps::stage(r, s.raw, 2 * m >= f.p), std::max(give, keep));
      s = {recv, false};
      lo = x.keep_lo;
      hi = x.keep_hi;
    }
    for (int k = depth - 1; k >= 0; --k) {
      const Split& x = split[k];
      t.sendrecv(x.peer, out + b.at(x.keep_lo) * es, b.span(x.keep_lo, x.keep_hi) * es, x.peer,
                 out + b.at(x.give_lo) * es, b.span(x.give_lo, x.give_hi) * es);
    }
  }
  steps::fold_out(t, f, recv, count, es);
}

}  // namespace tandem
