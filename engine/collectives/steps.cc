#include "collectives/steps.h"

#include <algorithm>
#include <memory>

namespace tandem {
namespace steps {
namespace {

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

}  // namespace

char* scratch() {
  thread_local std::unique_ptr<char[]> buffer;
  if (!buffer) buffer.reset(new char[kPieceBytes]);
  return buffer.get();
}

Reduction stage(const Reduction& r, bool raw_inputs, bool last) {
  Reduction s = r;
  if (!raw_inputs) s.prescale = 1.0;
  s.finalize = last && r.finalize;
  return s;
}

namespace {

void combine_piece(const char* theirs, const char* mine, char* out, size_t count, bool theirs_first,
                   const Reduction& r) {
  const void* in[2] = {theirs_first ? static_cast<const void*>(theirs) : mine,
                       theirs_first ? static_cast<const void*>(mine) : theirs};
  reduce(out, in, 2, count, r);
}

}  // namespace

void exchange_combine(Transport& t, int to, const void* send, size_t send_count, int from,
                      const void* mine, void* out, size_t recv_count, bool from_is_lower,
                      const Reduction& r, size_t basis) {
  const size_t es = dtype_size(r.dtype);
  const size_t piece = std::max<size_t>(1, kPieceBytes / es);
  const char* s = static_cast<const char*>(send);
  const char* m = static_cast<const char*>(mine);
  char* o = static_cast<char*>(out);
  char* theirs = scratch();
  const size_t rounds = std::max<size_t>(1, (basis + piece - 1) / piece);
  for (size_t k = 0; k < rounds; ++k) {
    const size_t lo = k * piece;
    const size_t sn = send_count > lo ? std::min(piece, send_count - lo) : 0;
    const size_t rn = recv_count > lo ? std::min(piece, recv_count - lo) : 0;
    t.sendrecv(to, s + lo * es, sn * es, from, theirs, rn * es);
    if (rn) combine_piece(theirs, m + lo * es, o + lo * es, rn, from_is_lower, r);
  }
}

void recv_combine(Transport& t, int from, const void* mine, void* out, size_t count,
                  bool from_is_lower, const Reduction& r) {
  const size_t es = dtype_size(r.dtype);
  const size_t piece = std::max<size_t>(1, kPieceBytes / es);
  const char* m = static_cast<const char*>(mine);
  char* o = static_cast<char*>(out);
  char* theirs = scratch();
  for (size_t lo = 0; lo < count; lo += piece) {
    const size_t rn = std::min(piece, count - lo);
    t.recv(from, theirs, rn * es);
    combine_piece(theirs, m + lo * es, o + lo * es, rn, from_is_lower, r);
  }
}

void send_pieces(Transport& t, int to, const void* send, size_t count, size_t elem_size) {
  const size_t piece = std::max<size_t>(1, kPieceBytes / elem_size);
  const char* s = static_cast<const char*>(send);
  for (size_t lo = 0; lo < count; lo += piece)
    t.send(to, s + lo * elem_size, std::min(piece, count - lo) * elem_size);
}

// Whole 64-byte lines per block, so that blocks never share a cache line
// and the kernels run on aligned runs.
Blocks::Blocks(size_t count, size_t elem_size, int parts) : count_(count) {
  const size_t unit = elem_size >= 64 ? 1 : 64 / elem_size;
  per_ = round_up((count + static_cast<size_t>(parts) - 1) / static_cast<size_t>(parts), unit);
}

size_t Blocks::at(int j) const { return std::min(count_, per_ * static_cast<size_t>(j)); }

Fold::Fold(int n, int rank) {
  while (p * 2 <= n) p *= 2;
  extra = n - p;
  if (rank < 2 * extra) {
    idle = rank % 2 == 0;
    index = idle ? -1 : rank / 2;
  } else {
    index = rank - extra;
  }
}

int Fold::rank_of(int i) const { return i < extra ? 2 * i + 1 : i + extra; }

Start fold_in(Transport& t, const Fold& f, const void* send, void* recv, size_t count,
              const Reduction& r) {
  const int me = t.rank();
  const size_t es = dtype_size(r.dtype);
  if (f.extra == 0) return {send, true};
  if (f.idle) {
    send_pieces(t, me + 1, send, count, es);
    return {nullptr, false};
  }
  if (f.paired(me)) {
    recv_combine(t, me - 1, send, recv, count, true, stage(r, true, false));
    return {recv, false};
  }
  if (r.prescale == 1.0) return {send, false};
  const void* in[1] = {send};
  reduce(recv, in, 1, count, stage(r, true, false));
  return {recv, false};
}

void fold_out(Transport& t, const Fold& f, void* recv, size_t count, size_t elem_size) {
  const int me = t.rank();
  if (!f.paired(me)) return;
  if (f.idle) t.recv(me + 1, recv, count * elem_size);
  else t.send(me - 1, recv, count * elem_size);
}

}  // namespace steps
}  // namespace tandem
