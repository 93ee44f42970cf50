#include <algorithm>
#include <cstring>
#include <memory>

#include "collectives/collectives.h"

namespace tandem {
namespace {

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

}  // namespace

// Bandwidth: every rank sends (n-1)/n of the buffer in each half, as a ring
// does, but in n-1 pairwise rounds; the extra staging memory is bounded (see
// reducescatter). The group is small (one rank per node), so the n-1 rounds
// of latency matter less than the fixed, rank-ordered reduction.
void allreduce(Transport& t, const void* send, void* recv, size_t count, const Reduction& r) {
  const int n = t.size(), me = t.rank();
  const size_t es = dtype_size(r.dtype);
  if (count == 0) return;
  char* data = static_cast<char*>(recv);
  if (n == 1) {
    const void* in[1] = {send};
    reduce(data, in, 1, count, r);  // copy, prescale and finalize
    return;
  }
  if (count * es * static_cast<size_t>(n - 1) <= kExchangeAllBytes) {
    // Latency-bound: one pairwise round trip per peer instead of two (the
    // allgather's), and every rank reduces the whole vector itself, in rank
    // order, so every rank still gets the same bits.
    const size_t bytes = count * es;
    std::unique_ptr<char[]> theirs(new char[bytes * static_cast<size_t>(n - 1)]);
    std::vector<const void*> parts(n);
    parts[me] = send;
    for (int step = 1; step < n; ++step) {
      const int to = (me + step) % n, from = (me - step + n) % n;
      char* slot = theirs.get() + static_cast<size_t>(step - 1) * bytes;
      t.sendrecv(to, send, bytes, from, slot, bytes);
      parts[from] = slot;
    }
    reduce(data, parts.data(), n, count, r);
    return;
  }
  const size_t unit = es >= 64 ? 1 : 64 / es;
  const size_t per = round_up((count + n - 1) / n, unit);
  std::vector<size_t> counts(n);
  for (int j = 0; j < n; ++j) {
    const size_t lo = std::min(count, per * j);
    counts[j] = std::min(count, lo + per) - lo;
  }
  std::vector<size_t> at(n, 0);
  for (int j = 1; j < n; ++j) at[j] = at[j - 1] + counts[j - 1];
  // Parts are read from send and written to recv, so out of place costs no
  // extra copy: only this rank's part is written before the allgather.
  reducescatter(t, send, data + at[me] * es, counts, r);
  std::vector<size_t> bytes(n);
  for (int j = 0; j < n; ++j) bytes[j] = counts[j] * es;
  allgatherv(t, data + at[me] * es, data, bytes);
}

void allreduce(Transport& t, void* buf, size_t count, const Reduction& r) {
  allreduce(t, buf, buf, count, r);
}

// In rounds of at most kPieceBytes per part: each round every rank exchanges
// the round's piece of every part pairwise, then reduces the piece of its own
// part in rank order. The scratch is (n-1) pieces, reused every round, so a
// 256 MiB allreduce neither allocates nor page-faults 128 MiB per call, and
// the piece being reduced is still in cache when it arrives.
void reducescatter(Transport& t, const void* send, void* recv, const std::vector<size_t>& counts,
                   const Reduction& r) {
  const int n = t.size(), me = t.rank();
  const size_t es = dtype_size(r.dtype);
  std::vector<size_t> at(n, 0);
  for (int j = 1; j < n; ++j) at[j] = at[j - 1] + counts[j - 1];
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  const size_t piece = std::max<size_t>(1, kPieceBytes / es);  // elements
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
