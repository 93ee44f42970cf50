// The tests' own model of each element type, written independently of
// engine/common/reduce.cc: float16 through the compiler's _Float16,
// bfloat16 by picking the nearer of the two neighbouring bfloat16 values.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstddef>
#include <vector>

#include "tandem/tandem.h"

namespace tandem {
namespace testing {

inline uint16_t ref_to_half(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
inline float ref_from_half(uint16_t u) {
  _Float16 h;
  std::memcpy(&h, &u, 2);
  return static_cast<float>(h);
}
inline float ref_from_bf16(uint16_t u) {
  uint32_t w = static_cast<uint32_t>(u) << 16;
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}
inline uint16_t ref_to_bf16(float f) {
  uint32_t w;
  std::memcpy(&w, &f, 4);
  const uint16_t down = static_cast<uint16_t>(w >> 16);
  const uint16_t up = static_cast<uint16_t>(down + 1);
  const double d = std::fabs(static_cast<double>(f) - ref_from_bf16(down));
  const double e = std::fabs(static_cast<double>(f) - ref_from_bf16(up));
  if (d < e) return down;
  if (e < d) return up;
  return (down & 1) ? up : down;
}

// Writes value v (exactly representable by construction) as dtype at p[i].
inline void put(tandem_dtype_t t, void* p, size_t i, double v) {
  switch (t) {
    case TANDEM_UINT8:
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(static_cast<int64_t>(v));
      break;
    case TANDEM_INT8:
      static_cast<int8_t*>(p)[i] = static_cast<int8_t>(static_cast<int64_t>(v));
      break;
    case TANDEM_INT32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case TANDEM_INT64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case TANDEM_FLOAT16: static_cast<uint16_t*>(p)[i] = ref_to_half(static_cast<float>(v)); break;
    case TANDEM_BFLOAT16: static_cast<uint16_t*>(p)[i] = ref_to_bf16(static_cast<float>(v)); break;
    case TANDEM_FLOAT32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case TANDEM_FLOAT64: static_cast<double*>(p)[i] = v; break;
    case TANDEM_BOOL: static_cast<uint8_t*>(p)[i] = v != 0; break;
    default: break;
  }
}

inline bool floating(tandem_dtype_t t) {
  return t == TANDEM_FLOAT16 || t == TANDEM_BFLOAT16 || t == TANDEM_FLOAT32 || t == TANDEM_FLOAT64;
}

// Input of `rank` at element i: small integers, so that every sum and
// product in the tests is exact in every type and the result does not
// depend on the layout; the only rounding is AVERAGE's division.
inline double input_value(tandem_dtype_t t, tandem_op_t op, int rank, size_t i) {
  const size_t k = (static_cast<size_t>(rank) * 7 + i * 3 + i / 9) % 9;
  if (t == TANDEM_BOOL) return (rank + i + i / 9) % 3 == 0 ? 1 : 0;
  if (op == TANDEM_PRODUCT) {
    static const double pos[] = {1, 2, 1, 1, 2, 1, 1, 1, 2};
    static const double sgn[] = {1, -2, 1, -1, 2, 1, -1, 1, 2};
    return t == TANDEM_UINT8 ? pos[k] : sgn[k];
  }
  if (t == TANDEM_UINT8) return static_cast<double>(k);
  return static_cast<double>(k) - 4;
}

// The expected value at element i depends only on this key (27 values), so
// the tests compute each distinct expectation once.
inline size_t pattern_key(size_t i) { return ((i * 3 + i / 9) % 9) * 3 + (i + i / 9) % 3; }

// Expected result at element i, folding ranks 0..n-1 in order in the
// accumulator type (float32 for the 16-bit floats), then storing as dtype.
inline void expected(tandem_dtype_t t, tandem_op_t op, int n, size_t i, double prescale,
                     double postscale, void* out) {
  double acc = 0;
  for (int r = 0; r < n; ++r) {
    double v = input_value(t, op, r, i) * (floating(t) ? prescale : 1.0);
    if (r == 0) {
      acc = v;
      continue;
    }
    switch (op) {
      case TANDEM_SUM:
      case TANDEM_AVERAGE: acc = t == TANDEM_BOOL ? (acc || v) : acc + v; break;
      case TANDEM_PRODUCT: acc = t == TANDEM_BOOL ? (acc && v) : acc * v; break;
      case TANDEM_MIN: acc = t == TANDEM_BOOL ? (acc && v) : std::min(acc, v); break;
      case TANDEM_MAX: acc = t == TANDEM_BOOL ? (acc || v) : std::max(acc, v); break;
      default: break;
    }
  }
  if (t == TANDEM_FLOAT64) {
    if (op == TANDEM_AVERAGE) acc = acc / n;
    put(t, out, 0, acc * postscale);
  } else if (floating(t)) {
    float a = static_cast<float>(acc);
    if (op == TANDEM_AVERAGE) a = a / static_cast<float>(n);
    put(t, out, 0, a * static_cast<float>(postscale));
  } else {
    int64_t a = static_cast<int64_t>(acc);
    // Integer sum/product wrap in the element's width.
    if (t == TANDEM_UINT8) a = static_cast<uint8_t>(a);
    if (t == TANDEM_INT8) a = static_cast<int8_t>(a);
    if (op == TANDEM_AVERAGE) a = a / n;
    put(t, out, 0, static_cast<double>(a));
  }
}

// The trees the allreduce algorithms across nodes reduce each element along
// (collectives/allreduce_algorithms.h), written here from their description,
// in float32 as the kernels compute it (prescale on the raw inputs, the
// AVERAGE division and postscale once at the end). x[r] is rank r's input.
// Recursive doubling and halving-doubling: the first 2(n-p) ranks fold in
// pairs onto the largest power of two p <= n, then pairs, pairs of pairs...
inline float tree_value(const std::vector<float>& x, float pre, float post) {
  const int n = static_cast<int>(x.size());
  int p = 1;
  while (p * 2 <= n) p *= 2;
  const int extra = n - p;
  std::vector<float> v(p);
  for (int i = 0; i < p; ++i)
    v[i] = i < extra ? x[2 * i] * pre + x[2 * i + 1] * pre : x[i + extra] * pre;
  for (int m = 1; m < p; m <<= 1)
    for (int i = 0; i < p; ++i)
      if ((i & m) == 0) v[i] = v[i | m] = v[i] + v[i | m];
  return v[0] / static_cast<float>(n) * post;
}

// Ring: block b of the vector (whole 64-byte lines) accumulates from rank b
// around the ring.
inline float ring_value(const std::vector<float>& x, size_t element, size_t count, float pre,
                        float post) {
  const size_t n = x.size();
  const size_t per = ((count + n - 1) / n + 15) / 16 * 16;
  const size_t b = element / per;
  float acc = x[b % n] * pre;
  for (size_t k = 1; k < n; ++k) acc = acc + x[(b + k) % n] * pre;
  return acc / static_cast<float>(n) * post;
}

}  // namespace testing
}  // namespace tandem
