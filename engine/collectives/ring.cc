// Allreduce by a ring, for large messages across nodes when the group is not
// a power of two (halving_doubling.cc would fold, moving the whole vector
// twice more on the folded pairs). The vector is cut into n blocks. In the
// reduce-scatter, step s, rank i sends block (i - s) to rank i + 1 and
// combines block (i - s - 1) arriving from rank i - 1 with its own input; so
// block b accumulates along the ring starting at rank b ((((r_b r_b+1)
// r_b+2) ...), and after n - 1 steps rank i holds block i + 1 complete. The
// allgather then passes the complete blocks around the ring in n - 1 more
// steps. Every rank sends 2 (n-1)/n of the vector in all, bandwidth-optimal
// for any n, in 2 (n-1) steps.
#include "collectives/allreduce_algorithms.h"
#include "collectives/steps.h"

namespace tandem {

void allreduce_ring(Transport& t, const void* send, void* recv, size_t count, const Reduction& r) {
  const int n = t.size(), me = t.rank();
  if (count == 0) return;
  if (n == 1) {
    const void* in[1] = {send};
    reduce(recv, in, 1, count, r);
    return;
  }
  const size_t es = dtype_size(r.dtype);
  char* out = static_cast<char*>(recv);
  // From the second step on a received partial (already scaled) meets this
  // rank's raw input: with a prescale, scale the input once up front.
  const char* in = static_cast<const char*>(send);
  bool raw = true;
  if (r.prescale != 1.0 && n > 2) {
    const void* src[1] = {send};
    reduce(recv, src, 1, count, steps::stage(r, true, false));
    in = out;
    raw = false;
  }
  const steps::Blocks b(count, es, n);
  const size_t basis = b.size(0);  // the largest block: the same pieces on every link
  const int next = (me + 1) % n, prev = (me - 1 + n) % n;
  for (int s = 0; s < n - 1; ++s) {
    const int give = (me - s + n) % n, take = (me - s - 1 + n) % n;
    const char* partial = (s == 0 ? in : out) + b.at(give) * es;
    steps::exchange_combine(t, next, partial, b.size(give), prev, in + b.at(take) * es,
                            out + b.at(take) * es, b.size(take), true,
                            steps::stage(r, raw, s == n - 2), basis);
  }
  for (int s = 0; s < n - 1; ++s) {
    const int give = (me + 1 - s + n) % n, take = (me - s + n) % n;
    t.sendrecv(next, out + b.at(give) * es, b.size(give) * es, prev, out + b.at(take) * es,
               b.size(take) * es);
  }
}

}  // namespace tandem
