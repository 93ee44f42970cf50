// The kernels on their own: conversions and every type x op on few-element
// and block boundary-crossing lengths, against the tests' reference.
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "common/reduce.h"
#include "common/errors.h"
#include "reference.h"

namespace tandem {
namespace testing {
namespace {

TEST(Reduce, HalfConversionsRoundTripEveryValue) {
  // Every float16 bit pattern widens exactly and narrows back to itself
  // (NaNs stay NaN); every bfloat16 likewise.
  for (uint32_t u = 0; u < 65536; ++u) {
    const uint16_t h = static_cast<uint16_t>(u);
    uint16_t out = 0;
    const void* in[1] = {&h};
    Reduction r{TANDEM_FLOAT16, TANDEM_SUM};
    reduce(&out, in, 1, 1, r);
    const bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
    if (nan) {
      EXPECT_TRUE((out & 0x7c00) == 0x7c00 && (out & 0x3ff)) << std::hex << u;
    } else {
      ASSERT_EQ(out, h) << std::hex << u;
    }
    r.dtype = TANDEM_BFLOAT16;
    reduce(&out, in, 1, 1, r);
    const bool bnan = (h & 0x7f80) == 0x7f80 && (h & 0x7f);
    if (bnan) {
      EXPECT_TRUE((out & 0x7f80) == 0x7f80 && (out & 0x7f)) << std::hex << u;
    } else {
      ASSERT_EQ(out, h) << std::hex << u;
    }
  }
}

TEST(Reduce, HalfNarrowingRoundsLikeTheCompiler) {
  // Sums of two float16 values land between representable values; the
  // kernel must round exactly as _Float16 does (nearest, ties to even).
  for (uint32_t a = 0; a < 65536; a += 37) {
    for (uint32_t b : {0x0001u, 0x3c00u, 0x1400u, 0x8400u, 0x7bffu, 0x0400u}) {
      const uint16_t x = static_cast<uint16_t>(a), y = static_cast<uint16_t>(b);
      const float fx = ref_from_half(x), fy = ref_from_half(y);
      if (std::isnan(fx)) continue;
      const void* in[2] = {&x, &y};
      uint16_t out = 0;
      reduce(&out, in, 2, 1, Reduction{TANDEM_FLOAT16, TANDEM_SUM});
      ASSERT_EQ(out, ref_to_half(fx + fy)) << std::hex << a << " + " << b;
      const uint16_t bx = static_cast<uint16_t>(a);
      const float gx = ref_from_bf16(bx), gy = ref_from_bf16(y);
      if (std::isnan(gx)) continue;
      const void* bin[2] = {&bx, &y};
      reduce(&out, bin, 2, 1, Reduction{TANDEM_BFLOAT16, TANDEM_SUM});
      ASSERT_EQ(out, ref_to_bf16(gx + gy)) << std::hex << a << " + " << b;
    }
  }
}

// Counts below, at and past a register run (kLine: 64 bytes, 8-64
// elements by type) and across float16 blocks (1537: three blocks of 512,
// the last partial), 1, 2 and 5 inputs, in place on the first input and on
// the last (a run's stores must follow all of its loads).
TEST(Reduce, EveryTypeAndOpEveryCountPath) {
  const tandem_dtype_t types[] = {TANDEM_UINT8,   TANDEM_INT8,    TANDEM_INT32,
                                  TANDEM_INT64,   TANDEM_FLOAT16, TANDEM_BFLOAT16,
                                  TANDEM_FLOAT32, TANDEM_FLOAT64, TANDEM_BOOL};
  for (int n : {1, 2, 5}) {
    for (size_t count : {1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1537}) {
      for (int alias : {0, n - 1}) {
        for (auto t : types) {
          for (int o = 0; o < TANDEM_OP_COUNT_; ++o) {
            const auto op = static_cast<tandem_op_t>(o);
            if (t == TANDEM_BOOL && op == TANDEM_AVERAGE) continue;
            if (op == TANDEM_ADASUM) continue;  // not elementwise: collectives/adasum.cc
            const size_t es = dtype_size(t);
            const double pre = floating(t) ? 2.0 : 1.0, post = floating(t) ? 0.25 : 1.0;
            std::vector<std::vector<uint8_t>> bufs(n, std::vector<uint8_t>(count * es));
            std::vector<const void*> in(n);
            for (int r = 0; r < n; ++r) {
              for (size_t i = 0; i < count; ++i)
                put(t, bufs[r].data(), i, input_value(t, op, r, i));
              in[r] = bufs[r].data();
            }
            Reduction red{t, op, pre, true, post, n};
            reduce(bufs[alias].data(), in.data(), n, count, red);  // in place on one input
            for (size_t i = 0; i < count; ++i) {
              uint8_t want[8];
              expected(t, op, n, i, pre, post, want);
              ASSERT_EQ(0, std::memcmp(want, bufs[alias].data() + i * es, es))
                  << dtype_name(t) << " " << op_name(op) << " " << n << " inputs, count " << count
                  << ", in place on input " << alias << ", element " << i;
            }
          }
        }
      }
    }
  }
}

// float16 and bfloat16 round to their type after every step, as Horovod's
// CPU kernels and the frameworks' own 16-bit arithmetic do: each scaled
// input, each partial, then the division and postscale. Horovod's TF tests
// compare with threshold 0 at 3 ranks, e.g. an Average of x, x, x against
// TensorFlow's float16 (x * 3) / 3, which rounds 3x first.
template <typename To, typename From>
void check_stepwise(tandem_dtype_t t, To to, From from) {
  const int n = 3;
  const size_t count = 700;  // crosses a block boundary
  std::vector<std::vector<uint16_t>> bufs(n, std::vector<uint16_t>(count));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) {
      // Magnitudes 1/8 .. 32 (float16 patterns, reread as bfloat16 values
      // of the same size), both signs: no overflow, no NaN.
      const float v = ref_from_half(static_cast<uint16_t>(0x3000 + (i * 37 + r * 101) % 0x2000));
      bufs[r][i] = to((i + r) % 4 == 0 ? -v : v);
    }
  std::vector<const void*> in(n);
  for (int r = 0; r < n; ++r) in[r] = bufs[r].data();
  struct Case {
    tandem_op_t op;
    double pre, post;
    bool same;
  };
  const Case cases[] = {{TANDEM_AVERAGE, 1, 1, true},
                        {TANDEM_SUM, 0.1915194503788923, 1, true},
                        {TANDEM_SUM, 1, 0.1915194503788923, true},
                        {TANDEM_PRODUCT, 1, 1, false},
                        {TANDEM_SUM, 0.7, 1, false},
                        {TANDEM_AVERAGE, 1, 0.3, false}};
  for (const Case& c : cases) {
    // `same`: every rank sends rank 0's values, as Horovod's tests do.
    std::vector<const void*> src(n, c.same ? in[0] : nullptr);
    if (!c.same) src = in;
    std::vector<uint16_t> out(count);
    reduce(out.data(), src.data(), n, count, Reduction{t, c.op, c.pre, true, c.post, n});
    const float ps = static_cast<float>(c.pre), qs = static_cast<float>(c.post);
    for (size_t i = 0; i < count; ++i) {
      auto x = [&](int r) {
        const float v = from(static_cast<const uint16_t*>(src[r])[i]);
        return c.pre != 1.0 ? from(to(v * ps)) : v;
      };
      float a = x(0);
      for (int r = 1; r < n; ++r) a = from(to(c.op == TANDEM_PRODUCT ? a * x(r) : a + x(r)));
      if (c.op == TANDEM_AVERAGE) a = a / static_cast<float>(n);
      ASSERT_EQ(out[i], to(a * qs)) << dtype_name(t) << " " << op_name(c.op) << " pre " << c.pre
                                    << " post " << c.post << ", element " << i;
    }
  }
}

TEST(Reduce, HalfTypesRoundAfterEveryStep) {
  check_stepwise(TANDEM_FLOAT16, ref_to_half, ref_from_half);
  check_stepwise(TANDEM_BFLOAT16, ref_to_bf16, ref_from_bf16);
}

TEST(Reduce, BoolTreatsAnyNonZeroAsTrue) {
  const uint8_t a[3] = {0, 7, 200}, b[3] = {0, 0, 1};
  const void* in[2] = {a, b};
  uint8_t out[3];
  reduce(out, in, 2, 3, Reduction{TANDEM_BOOL, TANDEM_SUM});
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 1);
  EXPECT_EQ(out[2], 1);
  reduce(out, in, 2, 3, Reduction{TANDEM_BOOL, TANDEM_MIN});
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 0);
  EXPECT_EQ(out[2], 1);
}

TEST(Reduce, IntegerAverageTruncatesAndSumWraps) {
  const int32_t a[2] = {7, 2147483647}, b[2] = {0, 1};
  const void* in[2] = {a, b};
  int32_t out[2];
  reduce(out, in, 2, 2, Reduction{TANDEM_INT32, TANDEM_AVERAGE, 1, true, 1, 2});
  EXPECT_EQ(out[0], 3);
  reduce(out, in, 2, 2, Reduction{TANDEM_INT32, TANDEM_SUM});
  EXPECT_EQ(out[1], -2147483647 - 1);
}

TEST(Reduce, CheckRejectsWhatMakesNoSense) {
  EXPECT_THROW(check_reduction("t", 99, TANDEM_SUM, 1, 1), InvalidArgument);
  EXPECT_THROW(check_reduction("t", TANDEM_FLOAT32, 99, 1, 1), InvalidArgument);
  EXPECT_THROW(check_reduction("t", TANDEM_BOOL, TANDEM_AVERAGE, 1, 1), InvalidArgument);
  EXPECT_THROW(check_reduction("t", TANDEM_INT64, TANDEM_SUM, 0.5, 1), InvalidArgument);
  EXPECT_THROW(check_reduction("t", TANDEM_FLOAT32, TANDEM_SUM, NAN, 1), InvalidArgument);
  EXPECT_NO_THROW(check_reduction("t", TANDEM_FLOAT16, TANDEM_AVERAGE, 0.5, 2));
}

}  // namespace
}  // namespace testing
}  // namespace tandem
