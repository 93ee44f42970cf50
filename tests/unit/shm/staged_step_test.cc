// The staged allreduce's step size (ShmGroup::decide_step): chosen from
// what a barrier costs, the same on every local rank in every call while it
// changes between calls, and larger where barriers hand the CPU away.
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "bootstrap/memory_bootstrap.h"
#include "common/reduce.h"
#include "shm/shm_group.h"
#include "shm_group_harness.h"

namespace tandem {
namespace testing {
namespace {

constexpr size_t KiB = 1024;

TEST(StagedStep, FollowsTheBarrierCost) {
  const size_t base = 256 * KiB, most = 4096 * KiB;
  // 0.3 ns per byte of work: a 256 KiB step is ~79 us of work.
  EXPECT_EQ(staged_step(base, most, 300, 0.3), base);       // spinning ranks: 0.3 us
  EXPECT_EQ(staged_step(base, most, 4000, 0.3), base);      // 2 x 4 us x 8 = 64 us < 79 us
  EXPECT_EQ(staged_step(base, most, 6000, 0.3), 2 * base);  // 96 us > 79 us
  EXPECT_EQ(staged_step(base, most, 2e6, 0.3), most);       // a scheduler slice per barrier
  EXPECT_EQ(staged_step(base, most, 1e12, 1e-9), most);     // never above the largest
  EXPECT_EQ(staged_step(base, base, 2e6, 0.3), base);       // fixed steps
  // Not a power-of-two multiple: stops at the largest.
  EXPECT_EQ(staged_step(4 * KiB, 12 * KiB, 1e6, 1.0), 12 * KiB);
  // Monotonic in the barrier cost.
  size_t last = 0;
  for (double b = 1; b < 1e8; b *= 1.7) {
    const size_t s = staged_step(base, most, b, 0.3);
    EXPECT_GE(s, last);
    last = s;
  }
}

// The climb towards the barrier rule's step: one doubling per decision,
// never up to a step measured slower per byte, back down where the step
// below was measured faster, and straight down when the rule wants less.
TEST(StagedStep, ClimbsOnlyWhileLargerStepsMeasureFaster) {
  const size_t base = 256 * KiB, most = 4096 * KiB;
  double wall[kStepClasses] = {};
  // Nothing measured yet: one doubling towards want, never past most.
  EXPECT_EQ(climb_step(base, most, base, most, wall), 2 * base);
  EXPECT_EQ(climb_step(base, most, 2048 * KiB, most, wall), most);
  EXPECT_EQ(climb_step(base, most, most, most, wall), most);
  // The rule wants less: down at once.
  EXPECT_EQ(climb_step(base, most, 2048 * KiB, base, wall), base);
  // 1 MiB measured 0.10 ns/B, 2 MiB 0.20 (its working set left the cache):
  // from 1 MiB it stays, from 2 MiB it goes back.
  wall[2] = 0.10;
  wall[3] = 0.20;
  EXPECT_EQ(climb_step(base, most, 1024 * KiB, most, wall), 1024 * KiB);
  EXPECT_EQ(climb_step(base, most, 2048 * KiB, most, wall), 1024 * KiB);
  // Within 5% is the same speed: it goes on climbing.
  wall[3] = 0.104;
  EXPECT_EQ(climb_step(base, most, 1024 * KiB, most, wall), 2048 * KiB);
  // Beside busy loops larger steps measure faster: it climbs to the top.
  double busy[kStepClasses] = {4.0, 2.0, 1.0, 0.5, 0.3};
  size_t step = base;
  for (int i = 0; i < 6; ++i) step = climb_step(base, most, step, most, busy);
  EXPECT_EQ(step, most);
}

// Local rank 0 publishes a new step after every call (a test rule cycling
// through sizes, one probe per call): every rank must take the published
// step in every call (else parts and barriers would not match: wrong bits
// or a hang), with results bitwise equal to the rank-order reduction, in
// place and not, on the arena and not, between other collectives.
TEST(StagedStep, RanksAgreeWhileTheStepChanges) {
  for (int n : {2, 3, 4}) {
    ShmOptions o;
    o.timeout = std::chrono::seconds(60);
    o.chunk_bytes = 4 * KiB;
    o.max_chunk_bytes = 64 * KiB;
    o.arena_bytes = 4 << 20;
    o.allreduce_path = ShmAllreducePath::kStaged;
    o.probe_every = 1;
    const std::vector<size_t> cycle = {64 * KiB, 8 * KiB, 12 * KiB, 4 * KiB, 40 * KiB, 16 * KiB};
    auto next = std::make_shared<size_t>(0);
    o.step_rule = [cycle, next](double, double) { return cycle[(*next)++ % cycle.size()]; };
    const int calls = 60;
    std::vector<std::vector<size_t>> steps(n);
    run_group(n, o, [&](ShmGroup& g, int r) {
      const std::vector<size_t> counts = {4097, 16384, 65537, 100003, 1, 30011, 262147};
      float* arena = static_cast<float*>(g.allocate(262147 * sizeof(float)));
      for (int call = 0; call < calls; ++call) {
        const size_t count = counts[call % counts.size()];
        const bool in_place = call % 3 != 0, on_arena = call % 5 == 4;
        CallBuffers b(r, count, call, in_place, on_arena ? arena : nullptr);
        steps[r].push_back(g.staged_step_bytes());
        Reduction red{TANDEM_FLOAT32, TANDEM_SUM, 1.0, true, 1.0, n};
        g.allreduce(b.send, b.recv, count, red);
        const std::vector<float> ref = rank_order_sum(n, count, call, red);
        ASSERT_EQ(std::memcmp(b.recv, ref.data(), count * sizeof(float)), 0)
            << "rank " << r << " call " << call << " count " << count << " step "
            << steps[r].back();
        // Other collectives in between take the base chunk's steps.
        if (call % 4 == 1) {
          std::vector<char> buf(50000, static_cast<char>(r == 1 ? 7 : 0));
          g.broadcast(buf.data(), buf.size(), 1);
          ASSERT_EQ(buf[49999], 7);
        }
      }
      g.free(arena);
    });
    for (int r = 1; r < n; ++r) EXPECT_EQ(steps[r], steps[0]) << n << " ranks";
    std::set<size_t> seen(steps[0].begin(), steps[0].end());
    EXPECT_GE(seen.size(), 4u) << n << " ranks: the step should have changed between calls";
  }
}

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

// 4 ranks on one CPU beside a busy thread: waits must yield (a peer needs
// the CPU) and each yield can hand it to the busy thread for a scheduler
// slice: the node takes larger steps.
TEST(StagedStep, GrowsWhereBarriersAreDear) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &set)) ++cpu;
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    pin_to(cpu);
    while (!stop.load(std::memory_order_relaxed)) {}
  });
  ShmOptions o;
  o.timeout = std::chrono::seconds(120);
  o.chunk_bytes = 16 * KiB;
  o.max_chunk_bytes = 1024 * KiB;
  o.allreduce_path = ShmAllreducePath::kStaged;
  o.probe_every = 1;
  std::vector<size_t> last(4);
  run_group(4, o, [&](ShmGroup& g, int r) {
    pin_to(cpu);
    std::vector<float> buf(1 << 18, 1.0f);  // 1 MiB: 64 base steps
    Reduction red{TANDEM_FLOAT32, TANDEM_MAX, 1.0, true, 1.0, 4};
    for (int i = 0; i < 8; ++i) g.allreduce(buf.data(), buf.data(), buf.size(), red);
    last[r] = g.staged_step_bytes();
    EXPECT_EQ(buf[12345], 1.0f);
  });
  stop = true;
  busy.join();
  EXPECT_GT(last[0], 16 * KiB) << "barriers that yield to a busy thread should grow the step";
  for (int r = 1; r < 4; ++r) EXPECT_EQ(last[r], last[0]);
}

// One rank: no barrier to amortize, so the step stays the base chunk
// however long a (preempted) probe would take.
TEST(StagedStep, FreeBarriersKeepTheBaseStep) {
  ShmOptions o;
  o.chunk_bytes = 16 * KiB;
  o.max_chunk_bytes = 1024 * KiB;
  o.allreduce_path = ShmAllreducePath::kStaged;
  o.probe_every = 1;
  run_group(1, o, [&](ShmGroup& g, int) {
    std::vector<float> buf(1 << 18, 1.0f);
    Reduction red{TANDEM_FLOAT32, TANDEM_SUM, 1.0, true, 1.0, 1};
    for (int i = 0; i < 8; ++i) g.allreduce(buf.data(), buf.data(), buf.size(), red);
    EXPECT_EQ(g.staged_step_bytes(), 16 * KiB);
  });
}

}  // namespace
}  // namespace testing
}  // namespace tandem
