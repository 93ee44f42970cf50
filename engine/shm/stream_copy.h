// Copies for data that will not be read again soon. A normal store first
// reads the destination line into the cache (read for ownership), so copying
// a large result out of the segment costs a read and a write of DRAM per
// line; non-temporal stores write the line directly. For allreduces far
// larger than the cache this removes a third of the memory traffic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace tandem {

// Above this many bytes per collective, results are written with
// non-temporal stores (the caller's buffer would not stay in cache anyway)...
constexpr size_t kStreamingBytes = size_t{8} << 20;

// ...but only where the destination is not also the input. A collective
// in place reads every line of its buffer in the same step that writes it
// (the copy-in and the reduction, moments before the copy-out), so there is
// no read for ownership to save: the line is already in this core's cache,
// and a non-temporal store has to evict it and send it to DRAM at once,
// where a normal store just dirties it (and the next call may still find it
// in the cache). build/tools/store-probe (contrib/bench/store_probe.cc)
// times both: rewriting a buffer in place, non-temporal stores were the
// slower ones at every size it timed, and out of place the two were even
// (docs/engine.md, "In place"). An in-place allreduce that streamed from
// kStreamingBytes up was slower than an out-of-place one of the same size.
inline bool stream_results(size_t bytes, bool into_input) {
  return bytes >= kStreamingBytes && !into_input;
}

inline void stream_copy(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__)
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  const size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
  if (bytes < head + 64) {
    std::memcpy(d, s, bytes);
    return;
  }
  std::memcpy(d, s, head);
  d += head, s += head, bytes -= head;
  const size_t body = bytes & ~size_t{63};
  for (size_t i = 0; i < body; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  std::memcpy(d + body, s + body, bytes - body);
  // Non-temporal stores are weakly ordered: make them visible before the
  // barrier that tells peers this step is done.
  _mm_sfence();
#else
  std::memcpy(dst, src, bytes);
#endif
}

}  // namespace tandem
