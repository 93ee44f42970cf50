// Which node-local allreduce each size takes (shm/path_choice.h): the
// chooser's rule, given times (deterministic), and every local rank taking
// the published path in every call while the choice changes, with results
// bitwise equal to the rank-order reduction.
#include "shm/path_choice.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "shm/shm_group.h"
#include "shm_group_harness.h"

namespace tandem {
namespace testing {
namespace {

constexpr int k = 20;  // 1 MiB
bool direct(const PathChooser& c, int cls = k) { return (c.choices() >> cls) & 1; }

// Feeds the chooser what it asks for: each call takes the path the choice
// says and costs that path's time.
void run(PathChooser& c, int calls, double staged, double direct_ns, int cls = k) {
  for (int i = 0; i < calls; ++i) {
    const bool d = direct(c, cls);
    c.record(cls, d, d ? direct_ns : staged);
  }
}

TEST(PathChooser, TakesTurnsUntilBothPathsAreTimed) {
  PathChooser c(uint64_t{1} << k);  // starts direct
  std::vector<bool> taken;
  for (int i = 0; i < 2 * (PathChooser::kSamples + 1); ++i) {
    taken.push_back(direct(c));
    c.record(k, taken.back(), 1.0);
  }
  int d = 0;
  for (size_t i = 0; i < taken.size(); ++i) {
    EXPECT_EQ(taken[i], i % 2 == 0) << "call " << i;
    d += taken[i];
  }
  EXPECT_EQ(d, PathChooser::kSamples + 1);
}

// Where one path is clearly the slower after a timed call each, turns
// stop there: 4 calls, 2 on each path, and no more on the slow one.
TEST(PathChooser, AClearlySlowerPathIsNotSampledFurther) {
  PathChooser c(0);
  std::vector<bool> taken;
  for (int i = 0; i < 12; ++i) {
    taken.push_back(direct(c));
    c.record(k, taken.back(), taken.back() ? 1.0 : 1.0 * PathChooser::kClearly * 1.1);
  }
  const std::vector<bool> want = {false, true, false, true, true, true,
                                  true,  true, true,  true, true, true};
  EXPECT_EQ(taken, want);
}

TEST(PathChooser, TakesTheFasterAndStaysWithinTheMargin) {
  PathChooser fast_direct(0);
  run(fast_direct, 20, 2.0, 1.0);
  EXPECT_TRUE(direct(fast_direct));
  PathChooser fast_staged(uint64_t{1} << k);
  run(fast_staged, 20, 1.0, 2.0);
  EXPECT_FALSE(direct(fast_staged));
  // 2% apart is the same speed: whichever it holds, it keeps.
  PathChooser close(0);
  run(close, 2 * (PathChooser::kSamples + 1), 1.00, 0.98);
  const bool held = direct(close);
  for (int i = 0; i < PathChooser::kRecheck - 2; ++i) {
    EXPECT_EQ(direct(close), held) << i;
    close.record(k, held, held ? 0.98 : 1.00);
  }
}

TEST(PathChooser, ChecksTheOtherPathNowAndThenAndFollowsIt) {
  PathChooser c(0);
  run(c, 2 * (PathChooser::kSamples + 1), 1.0, 2.0);  // staged wins
  ASSERT_FALSE(direct(c));
  // Settled: one direct call per kRecheck calls.
  int d = 0;
  for (int i = 0; i < 4 * PathChooser::kRecheck; ++i) {
    const bool took = direct(c);
    d += took;
    c.record(k, took, took ? 2.0 : 1.0);
  }
  EXPECT_EQ(d, 4);
  // The machine changes: direct is now the faster. The next recheck sees
  // it and the class moves over at once.
  run(c, PathChooser::kRecheck + 1, 1.0, 0.5);
  EXPECT_TRUE(direct(c));
  EXPECT_DOUBLE_EQ(c.best(k, true), 0.5);
}

TEST(PathChooser, ASlowSampleAloneDoesNotMoveIt) {
  PathChooser c(uint64_t{1} << k);
  run(c, 2 * (PathChooser::kSamples + 1), 2.0, 1.0);
  ASSERT_TRUE(direct(c));
  c.record(k, true, 9.0);  // one preempted call
  EXPECT_TRUE(direct(c));
  EXPECT_DOUBLE_EQ(c.best(k, true), 1.0);
  // Direct slow for good: once its recent samples all are, it moves.
  run(c, PathChooser::kSamples, 2.0, 9.0);
  EXPECT_FALSE(direct(c));
}

TEST(PathChooser, ClassesAreIndependent) {
  PathChooser c(0);
  run(c, 20, 1.0, 2.0, 14);
  run(c, 20, 2.0, 1.0, 24);
  EXPECT_FALSE(direct(c, 14));
  EXPECT_TRUE(direct(c, 24));
  EXPECT_FALSE(direct(c, 20)) << "untimed classes keep their start";
  EXPECT_EQ(PathChooser::size_class(4097), 12);
  EXPECT_EQ(PathChooser::size_class(size_t{1} << 20), 20);
  EXPECT_EQ(PathChooser::size_class((size_t{2} << 20) - 1), 20);
}

// Local rank 0 publishes the choice between calls while it explores both
// paths in every class: every rank must take the published path in every
// call (else barriers and buffers would not match: wrong bits or a hang),
// in place and not, on the arena and not, between other collectives.
TEST(PathChoice, RanksAgreeWhileTheChoiceChanges) {
  for (int n : {2, 3, 4}) {
    ShmOptions o;
    o.timeout = std::chrono::seconds(60);
    o.arena_bytes = 4 << 20;
    const int calls = 90;
    std::vector<std::vector<int>> took(n);
    bool single_copy = false;
    run_group(n, o, [&](ShmGroup& g, int r) {
      if (r == 0) single_copy = g.single_copy();
      const std::vector<size_t> counts = {4097, 65537, 300007};  // three size classes
      float* arena = static_cast<float*>(g.allocate(300007 * sizeof(float)));
      for (int call = 0; call < calls; ++call) {
        const size_t count = counts[call % counts.size()];
        const bool in_place = call % 4 != 0, on_arena = call % 7 == 6;
        CallBuffers b(r, count, call, in_place, on_arena ? arena : nullptr);
        Reduction red{TANDEM_FLOAT32, TANDEM_SUM, 1.0, true, 1.0, n};
        g.allreduce(b.send, b.recv, count, red);
        took[r].push_back(g.last_allreduce_direct());
        const std::vector<float> ref = rank_order_sum(n, count, call, red);
        ASSERT_EQ(std::memcmp(b.recv, ref.data(), count * sizeof(float)), 0)
            << "rank " << r << " call " << call << " count " << count << " direct "
            << took[r].back();
        if (call % 5 == 1) {
          std::vector<char> buf(50000, static_cast<char>(r == 1 ? 7 : 0));
          g.broadcast(buf.data(), buf.size(), 1);
          ASSERT_EQ(buf[49999], 7);
        }
      }
      g.free(arena);
    });
    for (int r = 1; r < n; ++r) EXPECT_EQ(took[r], took[0]) << n << " ranks, rank " << r;
    if (!single_copy) continue;  // refused here (ptrace scope, seccomp): staged throughout
    // Every class takes turns at first: both paths ran in each, each at
    // least a warm-up call and a timed one.
    for (size_t c = 0; c < 3; ++c) {
      int d = 0, s = 0;
      for (size_t i = c; i < took[0].size(); i += 3) (took[0][i] ? d : s)++;
      EXPECT_GE(d, 2) << n << " ranks, class " << c;
      EXPECT_GE(s, 2) << n << " ranks, class " << c;
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace tandem
