#include <algorithm>
#include <cstring>

#include "collectives/collectives.h"

namespace tandem {
namespace {

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

}  // namespace

// Bandwidth: every rank sends (n-1)/n of the buffer in each half, as a ring
// does, but in n-1 pairwise rounds; the extra staging memory is (n-1)/n of
// the buffer. The group is small (one rank per node), so the n-1 rounds of
// latency matter less than the fixed, rank-ordered reduction.
void allreduce(Transport& t, void* buf, size_t count, const Reduction& r) {
  const int n = t.size(), me = t.rank();
  const size_t es = dtype_size(r.dtype);
  if (count == 0) return;
  char* data = static_cast<char*>(buf);
  if (n == 1) {
    const void* in[1] = {data};
    reduce(data, in, 1, count, r);  // finalize only
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
  reducescatter(t, data, data + at[me] * es, counts, r);
  std::vector<size_t> bytes(n);
  for (int j = 0; j < n; ++j) bytes[j] = counts[j] * es;
  allgatherv(t, data + at[me] * es, data, bytes);
}

void reducescatter(Transport& t, const void* send, void* recv, const std::vector<size_t>& counts,
                   const Reduction& r) {
  const int n = t.size(), me = t.rank();
  const size_t es = dtype_size(r.dtype);
  std::vector<size_t> at(n, 0);
  for (int j = 1; j < n; ++j) at[j] = at[j - 1] + counts[j - 1];
  const char* in = static_cast<const char*>(send);
  const size_t mine = counts[me] * es;
  // Contributions to my part, one buffer per peer; my own is read in place.
  std::vector<std::vector<char>> theirs(n);
  for (int k = 1; k < n; ++k) {
    const int to = (me + k) % n, from = (me - k + n) % n;
    theirs[from].resize(mine);
    t.sendrecv(to, in + at[to] * es, counts[to] * es, from, theirs[from].data(), mine);
  }
  std::vector<const void*> parts(n);
  for (int j = 0; j < n; ++j) parts[j] = j == me ? in + at[me] * es : theirs[j].data();
  reduce(recv, parts.data(), n, counts[me], r);
}

}  // namespace tandem
