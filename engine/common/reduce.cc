// The kernels fold the inputs in rank order with tight, branch-free loops
// that GCC vectorises at -O2/-O3 (checked with -fopt-info-vec; see
// docs/engine.md): types computed in their own type a cache line at a time
// in registers (fold_in_registers), float16/bfloat16 in blocks of float32
// accumulators (fold_widened).
#include "common/reduce.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "common/errors.h"

namespace tandem {
namespace {

constexpr size_t kBlock = 512;

inline uint32_t f2u(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float u2f(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// IEEE half <-> float, branch-free so that the loops still vectorise.
// Widening is exact; narrowing rounds to nearest even, NaN stays a (quiet) NaN.
inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = static_cast<uint32_t>(h & 0x7fffu);
  // Normal and subnormal: shift into place and rescale by 2^112 (exact).
  const float scaled = u2f(em << 13) * 0x1p112f;
  // Inf/NaN: all-ones exponent.
  const uint32_t special = (em << 13) | 0x7f800000u;
  const uint32_t body = em >= 0x7c00u ? special : f2u(scaled);
  return u2f(body | sign);
}

inline uint16_t float_to_half(float f) {
  uint32_t u = f2u(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  // Subnormal results: let the FPU round by adding a magic number.
  const float denorm_magic = u2f(((127 - 15) + (23 - 10) + 1) << 23);
  const uint32_t sub = f2u(u2f(u) + denorm_magic) - f2u(denorm_magic);
  // Normal results: rebias the exponent and round the mantissa to even.
  const uint32_t odd = (u >> 13) & 1u;
  const uint32_t norm = (u + (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + odd) >> 13;
  const uint32_t big = u > 0x7f800000u ? 0x7e00u : 0x7c00u;  // NaN : overflow/Inf
  const uint32_t r = u >= ((127 + 16) << 23) ? big : (u < (113u << 23) ? sub : norm);
  return static_cast<uint16_t>(r | sign);
}

inline float bf16_to_float(uint16_t b) { return u2f(static_cast<uint32_t>(b) << 16); }

inline uint16_t float_to_bf16(float f) {
  const uint32_t u = f2u(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

// Element types: storage T, accumulator A, and the conversions between them.
template <typename S>
struct Plain {
  using T = S;
  using A = S;
  static constexpr bool floating = std::is_floating_point<S>::value;
  static constexpr bool widened = false;
  static A load(T x) { return x; }
  static T store(A x) { return x; }
  template <typename V>
  static V vload(V x) {
    return x;
  }
};
// float16 is widened a block at a time: with F16C (checked at run time) by
// the hardware's converters, else by the portable branch-free code above.
void widen_half_portable(const uint16_t* s, float* d, size_t m) {
  for (size_t i = 0; i < m; ++i) d[i] = half_to_float(s[i]);
}
void narrow_half_portable(const float* s, uint16_t* d, size_t m) {
  for (size_t i = 0; i < m; ++i) d[i] = float_to_half(s[i]);
}
#if defined(__x86_64__)
__attribute__((target("avx2,f16c"))) void widen_half_f16c(const uint16_t* s, float* d, size_t m) {
  size_t i = 0;
  for (; i + 8 <= m; i += 8)
    _mm256_storeu_ps(d + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  for (; i < m; ++i) d[i] = half_to_float(s[i]);
}
__attribute__((target("avx2,f16c"))) void narrow_half_f16c(const float* s, uint16_t* d, size_t m) {
  size_t i = 0;
  for (; i + 8 <= m; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < m; ++i) d[i] = float_to_half(s[i]);
}
// clang before 15 has no "f16c" for __builtin_cpu_supports (the fuzzing
// build, contrib/fuzz.sh, is clang's): there it asks cpuid, leaf 1, itself.
#if defined(__clang__) && __clang_major__ < 15
bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#else
bool cpu_has_f16c() { return __builtin_cpu_supports("f16c"); }
#endif
const bool kHaveF16c = __builtin_cpu_supports("avx2") && cpu_has_f16c();
#else
const bool kHaveF16c = false;
#endif

struct Half {
  using T = uint16_t;
  using A = float;
  static constexpr bool floating = true;
  static constexpr bool widened = true;
  static void widen(const T* s, A* d, size_t m) {
#if defined(__x86_64__)
    if (kHaveF16c) return widen_half_f16c(s, d, m);
#endif
    widen_half_portable(s, d, m);
  }
  static void narrow(const A* s, T* d, size_t m) {
#if defined(__x86_64__)
    if (kHaveF16c) return narrow_half_f16c(s, d, m);
#endif
    narrow_half_portable(s, d, m);
  }
};
// bfloat16 conversions are integer work on whole blocks (type-punned once
// per block, not per element), which vectorises.
struct BHalf {
  using T = uint16_t;
  using A = float;
  static constexpr bool floating = true;
  static constexpr bool widened = true;
  static void widen(const T* s, A* d, size_t m) {
    alignas(64) uint32_t w[kBlock];
    for (size_t i = 0; i < m; ++i) w[i] = static_cast<uint32_t>(s[i]) << 16;
    std::memcpy(d, w, m * 4);
  }
  static void narrow(const A* s, T* d, size_t m) {
    alignas(64) uint32_t u[kBlock];
    std::memcpy(u, s, m * 4);
    for (size_t i = 0; i < m; ++i) {
      const uint32_t x = u[i];
      const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
      const uint32_t nan = (x >> 16) | 0x40u;
      d[i] = static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
    }
  }
};

// bool: any non-zero byte is true; results are 0 or 1.
struct Bool {
  using T = uint8_t;
  using A = uint8_t;
  static constexpr bool floating = false;
  static constexpr bool widened = false;
  static A load(T x) { return x != 0; }
  static T store(A x) { return x; }
  template <typename V>
  static V vload(V x) {
    return reinterpret_cast<V>(x != 0) & 1;
  }
};

// Integer sum and product wrap around (two's complement) instead of being
// undefined behaviour: computed in the unsigned type of the same width.
template <typename A>
inline A wrap_add(A a, A b) {
  if constexpr (std::is_integral<A>::value) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <typename A>
inline A wrap_mul(A a, A b) {
  if constexpr (std::is_integral<A>::value) {
    using U = std::make_unsigned_t<A>;
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return static_cast<A>(static_cast<U>(static_cast<W>(a) * static_cast<W>(b)));
  } else {
    return a * b;
  }
}

// apply: one element. vapply: a vector of them (GCC vector extensions),
// the same operation element by element; integer sum and product through
// the unsigned vector type UV, so they wrap as wrap_add and wrap_mul do.
struct SumOp {
  template <typename A>
  static A apply(A a, A b) {
    return wrap_add(a, b);
  }
  template <typename V, typename UV>
  static V vapply(V a, V b) {
    return reinterpret_cast<V>(reinterpret_cast<UV>(a) + reinterpret_cast<UV>(b));
  }
};
struct ProdOp {
  template <typename A>
  static A apply(A a, A b) {
    return wrap_mul(a, b);
  }
  template <typename V, typename UV>
  static V vapply(V a, V b) {
    return reinterpret_cast<V>(reinterpret_cast<UV>(a) * reinterpret_cast<UV>(b));
  }
};
struct MinOp {
  template <typename A>
  static A apply(A a, A b) {
    return b < a ? b : a;
  }
  template <typename V, typename UV>
  static V vapply(V a, V b) {
    return b < a ? b : a;
  }
};
struct MaxOp {
  template <typename A>
  static A apply(A a, A b) {
    return a < b ? b : a;
  }
  template <typename V, typename UV>
  static V vapply(V a, V b) {
    return a < b ? b : a;
  }
};
struct OrOp {
  template <typename A>
  static A apply(A a, A b) {
    return a | b;
  }
  template <typename V, typename UV>
  static V vapply(V a, V b) {
    return a | b;
  }
};
struct AndOp {
  template <typename A>
  static A apply(A a, A b) {
    return a & b;
  }
  template <typename V, typename UV>
  static V vapply(V a, V b) {
    return a & b;
  }
};

// Rounds a block of accumulators to the storage type and back: what
// storing an intermediate result in a float16/bfloat16 buffer does.
template <typename E>
void round_to_storage(typename E::A* a, size_t m) {
  alignas(64) typename E::T b[kBlock];
  E::narrow(a, b, m);
  E::widen(b, a, m);
}

// Types computed in their own type: each run of kLine bytes of every input
// is folded into a few vector registers and stored once, so a 2-input sum
// reads each input and writes the output once (faster than a loop over an
// accumulator array, which copies the first input in and the accumulator
// out: build/tools/reduce-probe times both). A run's inputs are all loaded
// before its stores, so out may be any one of the inputs (in place). GCC's
// vector extensions rather than loops left to the vectoriser: loops over a
// run's accumulators kept them on the stack in this build
// (-fno-strict-aliasing), which was far slower. Same operations in the same
// order as element by element, so the same bits; no contraction into fused
// multiply-adds (ISO C++ mode, and the baseline x86-64 has none).
constexpr size_t kLine = 64;

template <typename E, typename Op, bool kPre>
void fold_in_registers(void* out_v, const void* const* in, int n, size_t count, typename E::A ps,
                       bool avg, typename E::A div, bool post, typename E::A qs) {
  using T = typename E::T;
  using A = typename E::A;
  static_assert(std::is_same<T, A>::value, "computed in its own type");
  using U = typename std::conditional_t<std::is_integral<T>::value, std::make_unsigned<T>,
                                        std::common_type<T>>::type;
  typedef T V __attribute__((vector_size(16)));
  typedef U UV __attribute__((vector_size(16)));
  constexpr size_t kLanes = 16 / sizeof(T);
  constexpr size_t kRun = kLine / 16;  // vectors per run
  T* out = static_cast<T*>(out_v);
  const T* s0 = static_cast<const T*>(in[0]);
  auto input = [ps](const T* p) {
    V v;
    std::memcpy(&v, p, sizeof v);
    v = E::vload(v);
    if constexpr (kPre) v = v * ps;
    return v;
  };
  size_t i = 0;
  for (; i + kRun * kLanes <= count; i += kRun * kLanes) {
    V a[kRun];
    for (size_t j = 0; j < kRun; ++j) a[j] = input(s0 + i + j * kLanes);
    for (int k = 1; k < n; ++k) {
      const T* s = static_cast<const T*>(in[k]) + i;
      for (size_t j = 0; j < kRun; ++j)
        a[j] = Op::template vapply<V, UV>(a[j], input(s + j * kLanes));
    }
    if (avg)
      for (size_t j = 0; j < kRun; ++j) a[j] = a[j] / div;
    if (post)
      for (size_t j = 0; j < kRun; ++j) a[j] = a[j] * qs;
    for (size_t j = 0; j < kRun; ++j) std::memcpy(out + i + j * kLanes, &a[j], sizeof(V));
  }
  auto scalar = [ps](T x) { return kPre ? static_cast<A>(E::load(x) * ps) : E::load(x); };
  for (; i < count; ++i) {
    A a = scalar(s0[i]);
    for (int k = 1; k < n; ++k) a = Op::apply(a, scalar(static_cast<const T*>(in[k])[i]));
    if (avg) a = static_cast<A>(a / div);
    if (post) a = a * qs;
    out[i] = E::store(a);
  }
}

// float16 and bfloat16: blocks of kBlock elements widened into a float32
// accumulator array (in L1 whatever n is; no full-size temporary), each
// step rounded back to the element type after it (the scaled input, every
// partial result): the arithmetic of Horovod's CPU kernels and of the
// frameworks' own float16 operations, and what a multi-stage reduction
// storing partials in the type gives.
template <typename E, typename Op, bool pre>
void fold_widened(void* out_v, const void* const* in, int n, size_t count, typename E::A ps,
                  bool avg, typename E::A div, bool post, typename E::A qs) {
  using T = typename E::T;
  using A = typename E::A;
  T* out = static_cast<T*>(out_v);
  alignas(64) A acc[kBlock];
  alignas(64) A tmp[kBlock];
  for (size_t base = 0; base < count; base += kBlock) {
    const size_t m = count - base < kBlock ? count - base : kBlock;
    E::widen(static_cast<const T*>(in[0]) + base, acc, m);
    if (pre) {
      for (size_t i = 0; i < m; ++i) acc[i] = acc[i] * ps;
      round_to_storage<E>(acc, m);
    }
    for (int k = 1; k < n; ++k) {
      E::widen(static_cast<const T*>(in[k]) + base, tmp, m);
      if (pre) {
        for (size_t i = 0; i < m; ++i) tmp[i] = tmp[i] * ps;
        round_to_storage<E>(tmp, m);
      }
      for (size_t i = 0; i < m; ++i) acc[i] = Op::apply(acc[i], tmp[i]);
      if (k < n - 1 || avg || post) round_to_storage<E>(acc, m);
    }
    if (avg)
      for (size_t i = 0; i < m; ++i) acc[i] = static_cast<A>(acc[i] / div);
    if (post)
      for (size_t i = 0; i < m; ++i) acc[i] = acc[i] * qs;
    E::narrow(acc, out + base, m);
  }
}

template <typename E, typename Op>
void kernel(void* out, const void* const* in, int n, size_t count, const Reduction& r) {
  using A = typename E::A;
  const bool pre = E::floating && r.prescale != 1.0;
  const bool avg = r.finalize && r.op == TANDEM_AVERAGE && r.divisor != 1;
  const bool post = E::floating && r.finalize && r.postscale != 1.0;
  const A ps = static_cast<A>(r.prescale);
  const A qs = static_cast<A>(r.postscale);
  const A div = static_cast<A>(r.divisor);
  if constexpr (!E::widened) {
    // The prescale is a template argument: tested inside the loop over the
    // inputs, GCC kept the accumulators on the stack.
    if (pre) fold_in_registers<E, Op, true>(out, in, n, count, ps, avg, div, post, qs);
    else fold_in_registers<E, Op, false>(out, in, n, count, ps, avg, div, post, qs);
  } else {
    if (pre) fold_widened<E, Op, true>(out, in, n, count, ps, avg, div, post, qs);
    else fold_widened<E, Op, false>(out, in, n, count, ps, avg, div, post, qs);
  }
}

template <typename E>
void by_op(void* out, const void* const* in, int n, size_t count, const Reduction& r) {
  switch (r.op) {
    case TANDEM_SUM:
    case TANDEM_AVERAGE: return kernel<E, SumOp>(out, in, n, count, r);
    case TANDEM_PRODUCT: return kernel<E, ProdOp>(out, in, n, count, r);
    case TANDEM_MIN: return kernel<E, MinOp>(out, in, n, count, r);
    case TANDEM_MAX: return kernel<E, MaxOp>(out, in, n, count, r);
    default: break;
  }
  throw InvalidArgument(std::string("reduce: unknown op ") + std::to_string(r.op));
}

void by_op_bool(void* out, const void* const* in, int n, size_t count, const Reduction& r) {
  switch (r.op) {
    case TANDEM_SUM:
    case TANDEM_MAX: return kernel<Bool, OrOp>(out, in, n, count, r);
    case TANDEM_MIN:
    case TANDEM_PRODUCT: return kernel<Bool, AndOp>(out, in, n, count, r);
    default: break;
  }
  throw InvalidArgument(std::string("reduce: op ") + op_name(r.op) + " is not defined for bool");
}

}  // namespace

size_t dtype_size(int dtype) {
  switch (dtype) {
    case TANDEM_UINT8:
    case TANDEM_INT8:
    case TANDEM_BOOL: return 1;
    case TANDEM_FLOAT16:
    case TANDEM_BFLOAT16: return 2;
    case TANDEM_INT32:
    case TANDEM_FLOAT32: return 4;
    case TANDEM_INT64:
    case TANDEM_FLOAT64: return 8;
    default: return 0;
  }
}

const char* dtype_name(int dtype) {
  static const char* const names[] = {"uint8",    "int8",    "int32",   "int64", "float16",
                                      "bfloat16", "float32", "float64", "bool"};
  return dtype >= 0 && dtype < TANDEM_DTYPE_COUNT_ ? names[dtype] : "unknown";
}

const char* op_name(int op) {
  static const char* const names[] = {"sum", "average", "min", "max", "product", "adasum"};
  return op >= 0 && op < TANDEM_OP_COUNT_ ? names[op] : "unknown";
}

bool is_floating(tandem_dtype_t dtype) {
  return dtype == TANDEM_FLOAT16 || dtype == TANDEM_BFLOAT16 || dtype == TANDEM_FLOAT32 ||
         dtype == TANDEM_FLOAT64;
}

void check_reduction(const char* what, int dtype, int op, double prescale, double postscale) {
  const std::string w(what);
  if (dtype_size(dtype) == 0)
    throw InvalidArgument(w + ": unknown data type " + std::to_string(dtype) +
                          "; expected a tandem_dtype_t (TANDEM_UINT8 .. TANDEM_BOOL)");
  if (op < 0 || op >= TANDEM_OP_COUNT_)
    throw InvalidArgument(w + ": unknown reduction op " + std::to_string(op) +
                          "; expected a tandem_op_t (TANDEM_SUM .. TANDEM_ADASUM)");
  if (op == TANDEM_ADASUM && !is_floating(static_cast<tandem_dtype_t>(dtype)))
    throw InvalidArgument(w + ": Adasum combines floating-point tensors only, got " +
                          dtype_name(dtype) + "; use float16, bfloat16, float32 or float64");
  if (dtype == TANDEM_BOOL && op == TANDEM_AVERAGE)
    throw InvalidArgument(w + ": average is not defined for bool; use sum (or) or min (and)");
  const bool floating = is_floating(static_cast<tandem_dtype_t>(dtype));
  if (!floating && (prescale != 1.0 || postscale != 1.0))
    throw InvalidArgument(w + ": prescale/postscale must be 1.0 for " + dtype_name(dtype) +
                          ", got " + std::to_string(prescale) + "/" + std::to_string(postscale) +
                          "; scale a floating-point type instead");
  if (!std::isfinite(prescale) || !std::isfinite(postscale))
    throw InvalidArgument(w + ": prescale and postscale must be finite numbers");
}

double load_floating(tandem_dtype_t dtype, const void* buf, size_t i) {
  switch (dtype) {
    case TANDEM_FLOAT16: return half_to_float(static_cast<const uint16_t*>(buf)[i]);
    case TANDEM_BFLOAT16: return bf16_to_float(static_cast<const uint16_t*>(buf)[i]);
    case TANDEM_FLOAT32: return static_cast<const float*>(buf)[i];
    case TANDEM_FLOAT64: return static_cast<const double*>(buf)[i];
    default: return 0.0;
  }
}

void store_floating(tandem_dtype_t dtype, void* buf, size_t i, double value) {
  switch (dtype) {
    case TANDEM_FLOAT16:
      static_cast<uint16_t*>(buf)[i] = float_to_half(static_cast<float>(value));
      break;
    case TANDEM_BFLOAT16:
      static_cast<uint16_t*>(buf)[i] = float_to_bf16(static_cast<float>(value));
      break;
    case TANDEM_FLOAT32: static_cast<float*>(buf)[i] = static_cast<float>(value); break;
    case TANDEM_FLOAT64: static_cast<double*>(buf)[i] = value; break;
    default: break;
  }
}

void reduce(void* out, const void* const* in, int n, size_t count, const Reduction& r) {
  if (count == 0) return;
  switch (r.dtype) {
    case TANDEM_UINT8: return by_op<Plain<uint8_t>>(out, in, n, count, r);
    case TANDEM_INT8: return by_op<Plain<int8_t>>(out, in, n, count, r);
    case TANDEM_INT32: return by_op<Plain<int32_t>>(out, in, n, count, r);
    case TANDEM_INT64: return by_op<Plain<int64_t>>(out, in, n, count, r);
    case TANDEM_FLOAT16: return by_op<Half>(out, in, n, count, r);
    case TANDEM_BFLOAT16: return by_op<BHalf>(out, in, n, count, r);
    case TANDEM_FLOAT32: return by_op<Plain<float>>(out, in, n, count, r);
    case TANDEM_FLOAT64: return by_op<Plain<double>>(out, in, n, count, r);
    case TANDEM_BOOL: return by_op_bool(out, in, n, count, r);
    default: break;
  }
  throw InvalidArgument(std::string("reduce: unknown data type ") + std::to_string(r.dtype));
}

}  // namespace tandem
