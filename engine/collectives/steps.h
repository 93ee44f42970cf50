// Building blocks shared by the allreduce algorithms across nodes
// (recursive_doubling.cc, halving_doubling.cc, ring.cc): a scratch buffer,
// the exchange-and-combine step, the block layout, and the fold that lets
// the power-of-two algorithms run on any number of ranks.
//
// Order of combination. Every combine names which operand comes first
// (`lower`): the partial of the lower-numbered ranks, so that the two ranks
// of a pair compute the same bits, and every element is reduced along one
// fixed tree whatever the timing.
#pragma once

#include <cstddef>

#include "common/reduce.h"
#include "transport/transport.h"

namespace tandem {
namespace steps {

// Exchange-and-combine steps move and reduce at most this many bytes at a
// time, so the scratch is bounded and reused (no page faults per call) and
// the piece being reduced is still in cache when it arrives.
constexpr size_t kPieceBytes = size_t{1} << 20;

// This thread's scratch of kPieceBytes, allocated on first use and reused
// by every later step of this thread.
char* scratch();

// The reduction of one combine: prescale only where the operands are still
// raw inputs, finalize (AVERAGE, postscale) only on the combine that gives
// the final value.
Reduction stage(const Reduction& r, bool raw_inputs, bool last);

// Sends send_count elements from `send` to `to` while receiving recv_count
// elements from `from`, and writes out[i] = combine(theirs[i], mine[i])
// (theirs first when from_is_lower, else mine first) for i < recv_count, a
// piece at a time: max(1, ceil(basis / piece)) sendrecvs, so `basis` (in
// elements) must be the same on the ranks of each link (a pair passes the
// larger of its two counts, a ring its largest block). out may be mine;
// send may overlap out only at the same offsets (a piece is sent before it
// is overwritten).
void exchange_combine(Transport& t, int to, const void* send, size_t send_count, int from,
                      const void* mine, void* out, size_t recv_count, bool from_is_lower,
                      const Reduction& r, size_t basis);

// Receives count elements from `from` and combines them with mine as
// above, a piece at a time; the peer calls send_pieces with the same count.
void recv_combine(Transport& t, int from, const void* mine, void* out, size_t count,
                  bool from_is_lower, const Reduction& r);
void send_pieces(Transport& t, int to, const void* send, size_t count, size_t elem_size);

// count elements cut into `parts` blocks of whole 64-byte lines (the last
// ones shorter or empty): block j is [at(j), at(j) + size(j)).
class Blocks {
 public:
  Blocks(size_t count, size_t elem_size, int parts);
  size_t at(int j) const;
  size_t size(int j) const { return at(j + 1) - at(j); }
  // Elements of blocks [lo, hi).
  size_t span(int lo, int hi) const { return at(hi) - at(lo); }

 private:
  size_t count_, per_;
};

// The fold of a group of n ranks onto the largest power of two p <= n. The
// first 2(n-p) ranks pair up: the even one of each pair sends its input to
// the odd one, which combines the two (even first) and takes part in the
// power-of-two algorithm as rank `index`; the others take part as
// rank - (n-p). At the end the odd ones send the result back. With n a
// power of two nobody folds.
struct Fold {
  Fold(int n, int rank);
  int p = 1;                     // ranks in the power-of-two algorithm
  int extra = 0;                 // n - p
  bool idle = false;             // an even rank of a pair: waits for the result
  int index = -1;                // this rank's index among the p, -1 when idle
  int rank_of(int index) const;  // group rank of index i among the p
  bool paired(int rank) const { return rank < 2 * extra; }
};

// This rank's partial as the power-of-two algorithm starts: where it lies
// and whether it is still a raw input (prescale not yet applied).
struct Start {
  const void* partial;
  bool raw;
};

// The fold's first half. An idle rank sends its input and gets nothing to
// work on (partial null); an odd paired rank combines its pair into recv.
// With ranks folded, the others apply prescale to their own input first (into
// recv, only when prescale is not 1), so that every operand of the first
// step is scaled alike.
Start fold_in(Transport& t, const Fold& f, const void* send, void* recv, size_t count,
              const Reduction& r);
// The second half: the odd paired ranks send the result, the idle ones
// receive it into recv.
void fold_out(Transport& t, const Fold& f, void* recv, size_t count, size_t elem_size);

}  // namespace steps
}  // namespace tandem
