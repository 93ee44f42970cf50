// Adasum (adaptive summation) over a transport: combines the ranks'
// gradients so that parallel components are averaged and orthogonal ones
// added. Two vectors a and b combine into
//   (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b,
// a coefficient staying 1 when its vector's squared norm is below
// sqrt(DBL_MIN) (a zero gradient adds nothing and divides by nothing). The
// group combines pairwise along a binary tree: ranks 2i and 2i+1 first,
// then pairs of pairs, so a power-of-two group is required.
//
// The vector is not exchanged whole at every level. Like the reduce-scatter
// of halving_doubling.cc, level d (d = 1, 2, 4, ...) pairs rank r with
// r ^ d; both hold the same range of elements, split it in two, send the
// half they give up and keep the other, so after log2(p) levels each rank
// owns 1/p of the vector. The coefficients of a level need the dot product
// and both norms over the whole range, which is spread over the 2d ranks
// sharing it: each computes its part in float64 and the 2d ranks sum the
// triples by recursive doubling, lower rank's partial first, so that every
// one of them derives the same coefficients. An allgather replaying the
// levels backwards gives every rank the whole result.
//
// A fused buffer holds several tensors; each is combined with coefficients
// from its own elements only (counts gives their lengths), as if reduced
// alone. The arithmetic of the combination is float64, rounded to the
// element type once per level.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/collectives.h"
#include "common/errors.h"

namespace tandem {
namespace {

bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

// Dot product and squared norms per tensor over [lo, hi) of the fused
// vector, where `lower` holds the elements of the lower subgroup and
// `upper` those of the upper one (both indexed from lo).
void partial_triples(tandem_dtype_t dtype, const void* lower, const void* upper,
                     const std::vector<size_t>& starts, size_t lo, size_t hi,
                     std::vector<double>& triples) {
  for (size_t k = 0; k + 1 < starts.size(); ++k) {
    const size_t from = std::max(lo, starts[k]), to = std::min(hi, starts[k + 1]);
    double dot = 0, aa = 0, bb = 0;
    for (size_t i = from; i < to; ++i) {
      const double a = load_floating(dtype, lower, i - lo);
      const double b = load_floating(dtype, upper, i - lo);
      dot += a * b;
      aa += a * a;
      bb += b * b;
    }
    triples[3 * k] = dot;
    triples[3 * k + 1] = aa;
    triples[3 * k + 2] = bb;
  }
}

// Sums `v` over the 2d ranks of this rank's block (ranks sharing every bit
// above d) by recursive doubling; identical bits on all of them.
void sum_over_block(Transport& t, std::vector<double>& v, int d) {
  std::vector<double> theirs(v.size());
  const size_t bytes = v.size() * sizeof(double);
  for (int s = 1; s <= d; s <<= 1) {
    const int peer = t.rank() ^ s;
    t.sendrecv(peer, v.data(), bytes, peer, theirs.data(), bytes);
    const bool me_lower = t.rank() < peer;
    for (size_t i = 0; i < v.size(); ++i) v[i] = me_lower ? v[i] + theirs[i] : theirs[i] + v[i];
  }
}

double coefficient(double dot, double norm_sq) {
  static const double kTiny = std::sqrt(DBL_MIN);
  return norm_sq >= kTiny ? 1.0 - dot / norm_sq * 0.5 : 1.0;
}

// mine[i - lo] = ca a[i - lo] + cb b[i - lo] over [lo, hi), each tensor with
// the coefficients of its summed triple.
void combine(tandem_dtype_t dtype, const void* a, const void* b, void* mine,
             const std::vector<size_t>& starts, size_t lo, size_t hi,
             const std::vector<double>& triples) {
  for (size_t k = 0; k + 1 < starts.size(); ++k) {
    const size_t from = std::max(lo, starts[k]), to = std::min(hi, starts[k + 1]);
    const double ca = coefficient(triples[3 * k], triples[3 * k + 1]);
    const double cb = coefficient(triples[3 * k], triples[3 * k + 2]);
    for (size_t i = from; i < to; ++i) {
      const double v = ca * load_floating(dtype, a, i - lo) + cb * load_floating(dtype, b, i - lo);
      store_floating(dtype, mine, i - lo, v);
    }
  }
}

}  // namespace

void allreduce_adasum(Transport& t, void* buf, const std::vector<size_t>& counts,
                      tandem_dtype_t dtype) {
  const int n = t.size();
  if (!power_of_two(n))
    throw InvalidArgument("allreduce with Adasum: the group has " + std::to_string(n) +
                          " ranks; Adasum combines ranks pairwise and needs a power of two "
                          "(1, 2, 4, 8, ...); run on such a number or use Average");
  if (!is_floating(dtype))
    throw InvalidArgument(std::string("allreduce with Adasum: ") + dtype_name(dtype) +
                          " tensors cannot be combined; Adasum takes float16, bfloat16, "
                          "float32 or float64");
  std::vector<size_t> starts(counts.size() + 1, 0);
  for (size_t k = 0; k < counts.size(); ++k) starts[k + 1] = starts[k] + counts[k];
  const size_t total = starts.back();
  if (n == 1 || counts.empty()) return;
  const size_t es = dtype_size(dtype);
  char* data = static_cast<char*>(buf);
  std::vector<char> theirs((total / 2 + 1) * es);
  std::vector<double> triples(3 * counts.size());
  struct Level {
    int peer;
    size_t keep_lo, keep_hi, give_lo, give_hi;
  };
  std::vector<Level> levels;
  size_t lo = 0, hi = total;
  const int me = t.rank();
  for (int d = 1; d < n; d <<= 1) {
    const size_t mid = lo + (hi - lo) / 2;
    const bool upper = (me & d) != 0;
    Level x{me ^ d, upper ? mid : lo, upper ? hi : mid, upper ? lo : mid, upper ? mid : hi};
    const size_t keep = x.keep_hi - x.keep_lo, give = x.give_hi - x.give_lo;
    if (keep + give > 0)
      t.sendrecv(x.peer, data + x.give_lo * es, give * es, x.peer, theirs.data(), keep * es);
    char* mine = data + x.keep_lo * es;
    const void* a = upper ? static_cast<const void*>(theirs.data()) : mine;
    const void* b = upper ? static_cast<const void*>(mine) : theirs.data();
    partial_triples(dtype, a, b, starts, x.keep_lo, x.keep_hi, triples);
    sum_over_block(t, triples, d);
    combine(dtype, a, b, mine, starts, x.keep_lo, x.keep_hi, triples);
    levels.push_back(x);
    lo = x.keep_lo;
    hi = x.keep_hi;
  }
  for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
    const size_t keep = it->keep_hi - it->keep_lo, give = it->give_hi - it->give_lo;
    if (keep + give == 0) continue;
    t.sendrecv(it->peer, data + it->keep_lo * es, keep * es, it->peer, data + it->give_lo * es,
               give * es);
  }
}

}  // namespace tandem
