// Adasum against an independent reference: the pairwise combination applied
// along the binary tree of ranks (0 with 1, 2 with 3, then pairs of pairs)
// to whole vectors in float64, with no halving and no rounding between
// levels. The engine splits every level's work across ranks and rounds to
// the element type once per level, so the two agree to a few units of the
// type's precision; a wrong coefficient, pairing or tensor boundary is off
// by far more. Ranks are threads, each with its own Communicator.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "collectives/collectives.h"
#include "common/errors.h"
#include "common/reduce.h"
#include "thread_world.h"

namespace tandem {
namespace testing {
namespace {

constexpr tandem_dtype_t kFloats[] = {TANDEM_FLOAT16, TANDEM_BFLOAT16, TANDEM_FLOAT32,
                                      TANDEM_FLOAT64};

// Tensors of a fused buffer: empty, single, odd, and larger than the ranks.
const std::vector<size_t> kCounts = {0, 1, 7, 33, 1000};

using Vec = std::vector<double>;

Vec combine(const Vec& a, const Vec& b) {
  double dot = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) dot += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i];
  const double tiny = std::sqrt(DBL_MIN);
  const double ca = aa >= tiny ? 1 - dot / (2 * aa) : 1, cb = bb >= tiny ? 1 - dot / (2 * bb) : 1;
  Vec out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = ca * a[i] + cb * b[i];
  return out;
}

Vec reference(std::vector<Vec> level) {
  while (level.size() > 1) {
    std::vector<Vec> next;
    for (size_t i = 0; i < level.size(); i += 2) next.push_back(combine(level[i], level[i + 1]));
    level = std::move(next);
  }
  return level.front();
}

// Rank r's tensor k: a shared direction plus a rank's own part, so that the
// vectors are neither parallel nor orthogonal and every coefficient matters.
// Values are rounded to the type, and the reference reads them back.
std::vector<uint8_t> input(tandem_dtype_t t, int rank, const std::vector<size_t>& counts) {
  size_t total = 0;
  for (size_t c : counts) total += c;
  std::vector<uint8_t> buf(total * dtype_size(t));
  std::mt19937 shared(7), own(100 + rank);
  std::normal_distribution<double> g(0.0, 1.0);
  for (size_t i = 0; i < total; ++i) store_floating(t, buf.data(), i, g(shared) + 0.7 * g(own));
  return buf;
}

double tolerance(tandem_dtype_t t, int n) {
  const double eps = t == TANDEM_FLOAT16    ? 1.0 / 1024
                     : t == TANDEM_BFLOAT16 ? 1.0 / 128
                     : t == TANDEM_FLOAT32  ? FLT_EPSILON
                                            : 64 * DBL_EPSILON;
  return 4 * eps * std::max(1.0, std::log2(n));
}

void check_against_reference(int n, const std::vector<int>& layout, tandem_dtype_t t) {
  std::vector<std::vector<uint8_t>> results(n);
  run_world(n, layout, [&](Communicator& c) {
    const int me = c.identity().rank;
    std::vector<uint8_t> buf = input(t, me, kCounts);
    c.adasum(buf.data(), kCounts, t);
    results[me] = std::move(buf);
  });
  for (int r = 1; r < n; ++r)
    ASSERT_EQ(results[r], results[0]) << dtype_name(t) << ": rank " << r << " differs from rank 0";
  size_t start = 0;
  for (size_t count : kCounts) {
    std::vector<Vec> vs(n, Vec(count));
    for (int r = 0; r < n; ++r) {
      const std::vector<uint8_t> in = input(t, r, kCounts);
      for (size_t i = 0; i < count; ++i) vs[r][i] = load_floating(t, in.data(), start + i);
    }
    const Vec want = reference(vs);
    double err = 0, norm = 0;
    for (size_t i = 0; i < count; ++i) {
      const double got = load_floating(t, results[0].data(), start + i);
      err += (got - want[i]) * (got - want[i]);
      norm += want[i] * want[i];
    }
    if (count > 0) {
      EXPECT_LE(std::sqrt(err / norm), tolerance(t, n))
          << dtype_name(t) << " at " << n << " ranks, tensor of " << count;
    }
    start += count;
  }
}

TEST(Adasum, MatchesReferenceAt2Ranks) {
  for (auto t : kFloats) check_against_reference(2, {}, t);
}
TEST(Adasum, MatchesReferenceAt4Ranks) {
  for (auto t : kFloats) check_against_reference(4, {}, t);
}
TEST(Adasum, MatchesReferenceAt8Ranks) {
  for (auto t : kFloats) check_against_reference(8, {}, t);
}
TEST(Adasum, MatchesReferenceAcrossNodes) {
  check_against_reference(4, {2, 2}, TANDEM_FLOAT32);
  check_against_reference(8, {1, 1, 1, 1, 1, 1, 1, 1}, TANDEM_FLOAT64);
}

// Exact cases of the formula: orthogonal vectors add, equal ones average,
// and a zero vector leaves its partner unchanged.
TEST(Adasum, OrthogonalAddEqualAverageZeroKeeps) {
  run_world(2, {}, [](Communicator& c) {
    const int me = c.identity().rank;
    std::vector<float> orth = {me == 0 ? 1.f : 0.f, me == 0 ? 0.f : 2.f};
    c.adasum(orth.data(), {2}, TANDEM_FLOAT32);
    EXPECT_EQ(orth, (std::vector<float>{1.f, 2.f}));
    std::vector<float> same = {3.f, 4.f};
    c.adasum(same.data(), {2}, TANDEM_FLOAT32);
    EXPECT_EQ(same, (std::vector<float>{3.f, 4.f}));
    std::vector<float> zero = {me == 0 ? 5.f : 0.f, me == 0 ? -1.f : 0.f};
    c.adasum(zero.data(), {2}, TANDEM_FLOAT32);
    EXPECT_EQ(zero, (std::vector<float>{5.f, -1.f}));
  });
}

// Each tensor of a fused buffer gets its own coefficients: the same bits as
// reducing it alone.
TEST(Adasum, FusedTensorsAsIfAlone) {
  run_world(4, {}, [](Communicator& c) {
    const int me = c.identity().rank;
    std::vector<uint8_t> fused = input(TANDEM_FLOAT32, me, kCounts);
    std::vector<uint8_t> alone = fused;
    c.adasum(fused.data(), kCounts, TANDEM_FLOAT32);
    size_t at = 0;
    for (size_t count : kCounts) {
      c.adasum(alone.data() + at * 4, {count}, TANDEM_FLOAT32);
      at += count;
    }
    EXPECT_EQ(fused, alone);
  });
}

// allreduce with TANDEM_ADASUM is adasum of one tensor, out of place too,
// with prescale before and postscale after.
TEST(Adasum, AllreduceOpWithScales) {
  run_world(4, {}, [](Communicator& c) {
    const int me = c.identity().rank;
    std::vector<double> send(9), want(9), got(9);
    for (size_t i = 0; i < send.size(); ++i) send[i] = std::sin(1.0 + i * (me + 1));
    for (size_t i = 0; i < send.size(); ++i) want[i] = send[i] * 2.0;
    c.adasum(want.data(), {want.size()}, TANDEM_FLOAT64);
    for (double& w : want) w *= 0.25;
    c.allreduce(send.data(), got.data(), send.size(), TANDEM_FLOAT64, TANDEM_ADASUM, 2.0, 0.25);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-14) << i;
  });
}

// Rules refused on every rank before anything is sent, leaving the
// Communicator usable: a group that is not a power of two, an integer type,
// reducescatter.
TEST(Adasum, RefusesNonPowerOfTwoIntegersAndReducescatter) {
  for (int n : {3, 6}) {
    run_world(n, {}, [n](Communicator& c) {
      std::vector<float> x(4, 1.f);
      try {
        c.allreduce(x.data(), x.data(), x.size(), TANDEM_FLOAT32, TANDEM_ADASUM);
        ADD_FAILURE() << "Adasum at " << n << " ranks was not refused";
      } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("power of two"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(std::to_string(n) + " ranks"), std::string::npos)
            << e.what();
      }
      c.allreduce(x.data(), x.data(), x.size(), TANDEM_FLOAT32, TANDEM_SUM);
      EXPECT_EQ(x[0], static_cast<float>(n));
    });
  }
  run_world(2, {}, [](Communicator& c) {
    std::vector<int32_t> i(4, 1);
    EXPECT_THROW(c.allreduce(i.data(), i.data(), 4, TANDEM_INT32, TANDEM_ADASUM), InvalidArgument);
    std::vector<float> x(4, 1.f), y(2);
    EXPECT_THROW(c.reducescatter(x.data(), y.data(), {2, 2}, TANDEM_FLOAT32, TANDEM_ADASUM),
                 InvalidArgument);
  });
}

// The collective itself, over a transport whose group is not a power of two.
TEST(Adasum, CollectiveRefusesThreeRanks) {
  auto net = make_memory_network();
  auto world = std::make_shared<MemoryWorld>(3, std::vector<int>{});
  std::vector<std::thread> threads;
  std::vector<int> refused(3, 0);
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] {
      MemoryBootstrap b(world, r);
      auto t = connect_memory(net, b, {0, 1, 2}, std::chrono::seconds(10));
      float x = 1.f;
      try {
        allreduce_adasum(*t, &x, {1}, TANDEM_FLOAT32);
      } catch (const InvalidArgument&) { refused[r] = 1; }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(refused, (std::vector<int>{1, 1, 1}));
}

}  // namespace
}  // namespace testing
}  // namespace tandem
