// The runtime with ranks as threads: random enqueue orders, mismatches,
// duplicates, join, process sets, the cache path, fusion at the threshold,
// every collective type, and a lost peer.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <random>

#include "cluster.h"
#include "common/errors.h"

namespace tandem::runtime::testing {
namespace {

// Value rank r contributes at element i of tensor t.
float contribution(int r, int t, size_t i) { return static_cast<float>(r * 1000 + t * 10 + i % 7); }

TEST(Negotiation, RandomOrdersGiveRightSumsOnEveryRank) {
  for (int n : {2, 3, 4}) {
    for (unsigned seed = 0; seed < 8; ++seed) {
      Cluster c(n);
      const int kTensors = 24;
      std::atomic<int> wrong{0};
      c.each([&](int r, Runtime& rt) {
        std::mt19937 rng(seed * 131 + r);
        std::vector<int> order(kTensors);
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng);
        std::vector<std::vector<float>> in(kTensors), out(kTensors);
        std::vector<std::shared_ptr<HandleState>> h(kTensors);
        for (int t : order) {
          size_t len = 1 + static_cast<size_t>(t * 37 % 300);
          in[t].resize(len);
          out[t].assign(len, -1);
          for (size_t i = 0; i < len; ++i) in[t][i] = contribution(r, t, i);
          h[t] = rt.enqueue({tensor("t" + std::to_string(t), in[t].data(), out[t].data(),
                                    {static_cast<int64_t>(len)})},
                            allreduce());
          if (rng() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 800));
        }
        for (int t = 0; t < kTensors; ++t) {
          if (wait(h[t]) != TANDEM_SUCCESS) ++wrong;
          for (size_t i = 0; i < out[t].size(); ++i) {
            float expect = 0;
            for (int k = 0; k < n; ++k) expect += contribution(k, t, i);
            if (out[t][i] != expect) ++wrong;
          }
        }
      });
      EXPECT_EQ(wrong.load(), 0) << "n=" << n << " seed=" << seed;
    }
  }
}

struct MismatchCase {
  const char* field;
  std::function<void(int rank, TensorArg&, OpArgs&)> tweak;
};

TEST(Negotiation, MismatchFailsEveryRankWithNamedErrorAndNextStepWorks) {
  std::vector<MismatchCase> cases = {
      {"dtype",
       [](int r, TensorArg& t, OpArgs&) {
         if (r == 1) t.dtype = TANDEM_INT32;
       }},
      {"shape",
       [](int r, TensorArg& t, OpArgs&) {
         if (r == 1) t.shape = {2, 2};
       }},
      {"reduce op",
       [](int r, TensorArg&, OpArgs& a) {
         if (r == 1) a.op = TANDEM_MAX;
       }},
      {"root",
       [](int r, TensorArg&, OpArgs& a) {
         a.type = OpType::kBroadcast;
         a.root = r == 1 ? 1 : 0;
       }},
      {"postscale",
       [](int r, TensorArg&, OpArgs& a) {
         if (r == 1) a.postscale = 0.5;
       }},
  };
  Cluster c(3);
  for (const auto& mc : cases) {
    std::vector<std::string> errors(3);
    std::vector<tandem_result_t> codes(3);
    c.each([&](int r, Runtime& rt) {
      std::vector<float> in(4, 1.0f), out(4, 0.0f);
      TensorArg t = tensor(std::string("bad.") + mc.field, in.data(), out.data(), {4});
      OpArgs a = allreduce();
      mc.tweak(r, t, a);
      auto h = rt.enqueue({t}, a);
      codes[r] = wait(h);
      errors[r] = h->error();
      // The next step with agreeing arguments works.
      auto ok = rt.enqueue({tensor("good", in.data(), out.data(), {4})}, allreduce());
      EXPECT_EQ(wait(ok), TANDEM_SUCCESS) << ok->error();
      EXPECT_EQ(out[0], 3.0f);
    });
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(codes[r], TANDEM_ERR_MISMATCH) << mc.field;
      EXPECT_NE(errors[r].find(std::string("'bad.") + mc.field + "'"), std::string::npos)
          << errors[r];
      EXPECT_NE(errors[r].find(std::string("disagree on ") + mc.field), std::string::npos)
          << errors[r];
      EXPECT_NE(errors[r].find("ranks 0,2"), std::string::npos) << errors[r];
      EXPECT_NE(errors[r].find("rank 1 "), std::string::npos) << errors[r];
      EXPECT_EQ(errors[r], errors[0]);
    }
  }
  EXPECT_EQ(c.ranks[0]->counters().get(Counter::kMismatches), cases.size());
}

TEST(Negotiation, DuplicateNameInFlightIsAnErrorAtOnce) {
  Cluster c(2);
  std::vector<float> a(8, 1), b(8, 1), out(8), out2(8);
  auto h0 = c.ranks[0]->enqueue({tensor("dup", a.data(), out.data(), {8})}, allreduce());
  EXPECT_THROW(c.ranks[0]->enqueue({tensor("dup", a.data(), out2.data(), {8})}, allreduce()),
               DuplicateNameError);
  // Within one grouped call too.
  EXPECT_THROW(c.ranks[1]->enqueue({tensor("g", a.data(), out.data(), {8}),
                                    tensor("g", b.data(), out2.data(), {8})},
                                   allreduce()),
               DuplicateNameError);
  auto h1 = c.ranks[1]->enqueue({tensor("dup", b.data(), out2.data(), {8})}, allreduce());
  EXPECT_EQ(wait(h0), TANDEM_SUCCESS);
  EXPECT_EQ(wait(h1), TANDEM_SUCCESS);
  EXPECT_EQ(out[3], 2.0f);
  // Once done, the name may be used again.
  auto again = c.ranks[0]->enqueue({tensor("dup", a.data(), out.data(), {8})}, allreduce());
  auto again1 = c.ranks[1]->enqueue({tensor("dup", b.data(), out2.data(), {8})}, allreduce());
  EXPECT_EQ(wait(again), TANDEM_SUCCESS);
  EXPECT_EQ(wait(again1), TANDEM_SUCCESS);
}

TEST(Negotiation, StallWarningNamesTensorAndMissingRanks) {
  Settings s = Cluster::test_settings();
  s.stall_check_seconds = 0.2;
  Cluster c(3, s);
  std::vector<float> in(4, 1), out0(4), out2(4), out1(4);
  auto h0 = c.ranks[0]->enqueue({tensor("slow.tensor", in.data(), out0.data(), {4})}, allreduce());
  auto h2 = c.ranks[2]->enqueue({tensor("slow.tensor", in.data(), out2.data(), {4})}, allreduce());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (c.ranks[0]->counters().get(Counter::kStallWarnings) == 0 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto logs = c.logs();
  ASSERT_FALSE(logs.empty());
  EXPECT_NE(logs[0].find("'slow.tensor'"), std::string::npos) << logs[0];
  EXPECT_NE(logs[0].find("enqueued by rank(s) 0,2 but not by rank(s) 1"), std::string::npos)
      << logs[0];
  EXPECT_FALSE(h0->done());
  auto h1 = c.ranks[1]->enqueue({tensor("slow.tensor", in.data(), out1.data(), {4})}, allreduce());
  EXPECT_EQ(wait(h0), TANDEM_SUCCESS);
  EXPECT_EQ(wait(h1), TANDEM_SUCCESS);
  EXPECT_EQ(wait(h2), TANDEM_SUCCESS);
  EXPECT_EQ(out1[0], 3.0f);
}

// The same for a tensor agreed through the cache: its rounds are bits,
// which do not say who lacks it, so a stall asks for rounds of messages
// (after half the check time) and the warning still names the ranks.
TEST(Negotiation, StallWarningOfACachedTensorNamesTheMissingRanks) {
  Settings s = Cluster::test_settings();
  s.stall_check_seconds = 0.4;
  s.deadlock_check_seconds = 0;
  Cluster c(3, s);
  std::vector<float> in(4, 1), out(4);
  c.each([&](int, Runtime& rt) {
    std::vector<float> o(4);
    EXPECT_EQ(wait(rt.enqueue({tensor("cached.slow", in.data(), o.data(), {4})}, allreduce())),
              TANDEM_SUCCESS);
  });
  const uint64_t rounds = c.ranks[0]->counters().get(Counter::kMessageRounds);
  std::vector<float> out0(4), out2(4), out1(4);
  auto h0 = c.ranks[0]->enqueue({tensor("cached.slow", in.data(), out0.data(), {4})}, allreduce());
  auto h2 = c.ranks[2]->enqueue({tensor("cached.slow", in.data(), out2.data(), {4})}, allreduce());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (c.ranks[0]->counters().get(Counter::kStallWarnings) == 0 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto logs = c.logs();
  ASSERT_FALSE(logs.empty());
  EXPECT_NE(logs[0].find("'cached.slow'"), std::string::npos) << logs[0];
  EXPECT_NE(logs[0].find("enqueued by rank(s) 0,2 but not by rank(s) 1"), std::string::npos)
      << logs[0];
  EXPECT_GT(c.ranks[0]->counters().get(Counter::kMessageRounds), rounds);
  auto h1 = c.ranks[1]->enqueue({tensor("cached.slow", in.data(), out1.data(), {4})}, allreduce());
  EXPECT_EQ(wait(h0), TANDEM_SUCCESS);
  EXPECT_EQ(wait(h1), TANDEM_SUCCESS);
  EXPECT_EQ(wait(h2), TANDEM_SUCCESS);
  EXPECT_EQ(out1[0], 3.0f);
}

TEST(Negotiation, StallShutdownFailsEveryRank) {
  Settings s = Cluster::test_settings();
  s.stall_check_seconds = 0.1;
  s.stall_shutdown_seconds = 0.3;
  Cluster c(2, s);
  std::vector<float> in(4, 1), out(4);
  auto h = c.ranks[0]->enqueue({tensor("never", in.data(), out.data(), {4})}, allreduce());
  EXPECT_EQ(wait(h), TANDEM_ERR_TIMEOUT);
  EXPECT_NE(h->error().find("'never'"), std::string::npos) << h->error();
  // Rank 1 learns in the same cycle: its later calls fail instead of hanging.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool refused = false;
  while (!refused && std::chrono::steady_clock::now() < deadline) {
    try {
      auto x = c.ranks[1]->enqueue({tensor("after", in.data(), out.data(), {4})}, allreduce());
      EXPECT_EQ(wait(x), TANDEM_ERR_ABORTED);
      refused = true;
    } catch (const AbortedError&) { refused = true; }
  }
  EXPECT_TRUE(refused);
}

TEST(Negotiation, JoinWithUnevenStepsReturnsLastRank) {
  Cluster c(3);
  const int steps[3] = {2, 5, 3};
  std::vector<std::vector<float>> results(3);
  std::vector<int> last(3, -1);
  c.each([&](int r, Runtime& rt) {
    std::vector<float> in(6), out(6);
    for (int s = 0; s < steps[r]; ++s) {
      std::fill(in.begin(), in.end(), static_cast<float>(r + 1));
      auto h =
          rt.enqueue({tensor("step" + std::to_string(s), in.data(), out.data(), {6})}, allreduce());
      ASSERT_EQ(wait(h), TANDEM_SUCCESS) << h->error();
      results[r].push_back(out[0]);
    }
    auto j = rt.join();
    ASSERT_EQ(wait(j), TANDEM_SUCCESS) << j->error();
    last[r] = j->int_result();
  });
  // Steps 0-1: all three; step 2: ranks 1,2; steps 3-4: rank 1 alone.
  EXPECT_EQ(results[1], (std::vector<float>{6, 6, 5, 2, 2}));
  EXPECT_EQ(results[2], (std::vector<float>{6, 6, 5}));
  for (int r = 0; r < 3; ++r) EXPECT_EQ(last[r], 1);
  // The job goes on after the join.
  c.each([&](int r, Runtime& rt) {
    float in = 1, out = 0;
    auto h = rt.enqueue({tensor("after.join", &in, &out, {})}, allreduce());
    EXPECT_EQ(wait(h), TANDEM_SUCCESS);
    EXPECT_EQ(out, 3.0f) << r;
  });
}

TEST(Negotiation, JoinedRankContributesIdentityToMinAndMax) {
  Cluster c(2);
  c.each([&](int r, Runtime& rt) {
    if (r == 0) {
      auto j = rt.join();
      EXPECT_EQ(wait(j), TANDEM_SUCCESS);
      EXPECT_EQ(j->int_result(), 1);
      return;
    }
    float in = -5, mn = 0, mx = 0;
    auto a = rt.enqueue({tensor("mn", &in, &mn, {})}, allreduce(TANDEM_MIN));
    auto b = rt.enqueue({tensor("mx", &in, &mx, {})}, allreduce(TANDEM_MAX));
    EXPECT_EQ(wait(a), TANDEM_SUCCESS);
    EXPECT_EQ(wait(b), TANDEM_SUCCESS);
    EXPECT_EQ(mn, -5.0f);
    EXPECT_EQ(mx, -5.0f);
    auto j = rt.join();
    EXPECT_EQ(wait(j), TANDEM_SUCCESS);
  });
}

TEST(Negotiation, ProcessSetsRunConcurrentlyWithTheGlobalSet) {
  Cluster c(4);
  std::vector<int> ids(4);
  c.each([&](int r, Runtime& rt) {
    int even = rt.add_process_set({0, 2});
    int odd = rt.add_process_set({3, 1});
    ids[r] = even * 10 + odd;
    int mine = r % 2 == 0 ? even : odd;
    for (int step = 0; step < 5; ++step) {
      float gin = static_cast<float>(r), gout = 0, sin = static_cast<float>(r), sout = 0;
      // Subset tensor first on odd ranks, global first on even ranks.
      std::shared_ptr<HandleState> hs, hg;
      if (r % 2) hs = rt.enqueue({tensor("s", &sin, &sout, {})}, allreduce(TANDEM_SUM, mine));
      hg = rt.enqueue({tensor("g", &gin, &gout, {})}, allreduce());
      if (!hs) hs = rt.enqueue({tensor("s", &sin, &sout, {})}, allreduce(TANDEM_SUM, mine));
      ASSERT_EQ(wait(hs), TANDEM_SUCCESS) << hs->error();
      ASSERT_EQ(wait(hg), TANDEM_SUCCESS) << hg->error();
      EXPECT_EQ(gout, 6.0f);
      EXPECT_EQ(sout, r % 2 ? 4.0f : 2.0f);
    }
    EXPECT_EQ(rt.process_set_ranks(odd), (std::vector<int>{1, 3}));
    float x = 1, y = 0;
    EXPECT_THROW(rt.enqueue({tensor("x", &x, &y, {})}, allreduce(TANDEM_SUM, r % 2 ? even : odd)),
                 InvalidArgument);
    rt.remove_process_set(odd);
    EXPECT_THROW(rt.process_set_ranks(odd), InvalidArgument);
  });
  for (int r = 1; r < 4; ++r) EXPECT_EQ(ids[r], ids[0]);
  EXPECT_NE(ids[0] / 10, ids[0] % 10);
}

// Across nodes round requests travel through the wake relay, which may
// lose them (UDP). Here every request is lost: members sleep as if they
// could be woken, and nobody wakes them. A process set {0, 2} still runs,
// although each of its cycles also needs rank 1, which has nothing to do:
// rank 1's sleep ends on the fallback and it joins a round anyway. (Without
// the fallback rank 1 would sleep on and ranks 0 and 2 would wait forever.)
class LostWakeUps : public ThreadDataPath {
 public:
  using ThreadDataPath::ThreadDataPath;
  bool can_wake_members() const override { return true; }
  bool wake_ups_may_be_lost() const override { return true; }
  bool wait_for_round(uint64_t, std::chrono::steady_clock::time_point until,
                      const std::function<bool()>& ready) override {
    while (std::chrono::steady_clock::now() < until && !ready())
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    return false;
  }
};

class LostWakeUpsFactory : public DataPathFactory {
 public:
  LostWakeUpsFactory(ThreadCluster& c, int rank) : c_(c), rank_(rank) {}
  std::unique_ptr<DataPath> create(const std::vector<int>& ranks) override {
    auto it = std::find(ranks.begin(), ranks.end(), rank_);
    if (it == ranks.end()) return nullptr;
    return std::make_unique<LostWakeUps>(c_.world_for(ranks), static_cast<int>(it - ranks.begin()));
  }

 private:
  ThreadCluster& c_;
  int rank_;
};

TEST(Negotiation, LostWakeUpsAreCoveredByTheFallbackRound) {
  ThreadCluster threads(3);
  std::vector<std::unique_ptr<Runtime>> ranks;
  for (int r = 0; r < 3; ++r)
    ranks.push_back(std::make_unique<Runtime>(
        r, 3, std::make_unique<LostWakeUpsFactory>(threads, r), Cluster::test_settings()));
  std::vector<std::thread> t;
  std::atomic<int> wrong{0};
  for (int r = 0; r < 3; ++r)
    t.emplace_back([&, r] {
      Runtime& rt = *ranks[r];
      const int pair = rt.add_process_set({0, 2});
      if (r == 1) return;  // idle from here on
      // Past the time ranks keep polling after a busy round (kStayAwake):
      // rank 1 is asleep now.
      std::this_thread::sleep_for(std::chrono::milliseconds(60));
      for (int step = 0; step < 3; ++step) {
        float x = float(r), y = -1;
        auto h = rt.enqueue({tensor("p" + std::to_string(step), &x, &y, {})},
                            allreduce(TANDEM_SUM, pair));
        if (!h->wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(10)) ||
            h->result() != TANDEM_SUCCESS || y != 2.0f)
          ++wrong;
      }
    });
  for (auto& x : t) x.join();
  EXPECT_EQ(wrong.load(), 0);
  for (auto& rt : ranks) rt->stop();
}

TEST(Negotiation, ProcessSetAddMismatchIsAnError) {
  Cluster c(2);
  std::vector<std::string> errors(2);
  c.each([&](int r, Runtime& rt) {
    try {
      rt.add_process_set(r == 0 ? std::vector<int>{0} : std::vector<int>{1});
    } catch (const InvalidArgument&) {
    } catch (const Error& e) { errors[r] = e.what(); }
  });
  EXPECT_NE(errors[0].find("process set ranks"), std::string::npos) << errors[0];
  EXPECT_EQ(errors[0], errors[1]);
}

TEST(Cache, LaterStepsAgreeThroughBitsAndInvalidationRenegotiates) {
  Cluster c(3);
  auto step = [&](const std::string& tag, int64_t len) {
    c.each([&](int r, Runtime& rt) {
      std::vector<std::shared_ptr<HandleState>> h;
      std::vector<std::vector<float>> in(10), out(10);
      for (int t = 0; t < 10; ++t) {
        in[t].assign(static_cast<size_t>(len), static_cast<float>(r));
        out[t].assign(static_cast<size_t>(len), 0);
        h.push_back(rt.enqueue(
            {tensor("w" + std::to_string(t), in[t].data(), out[t].data(), {len})}, allreduce()));
      }
      for (int t = 0; t < 10; ++t) {
        ASSERT_EQ(wait(h[t]), TANDEM_SUCCESS) << tag << " " << h[t]->error();
        EXPECT_EQ(out[t][0], 3.0f) << tag;
      }
    });
  };
  step("first", 16);
  EXPECT_EQ(c.ranks[0]->counters().get(Counter::kCacheHits), 0u);
  EXPECT_EQ(c.ranks[0]->counters().get(Counter::kRequestsSent), 10u);
  const uint64_t message_rounds = c.ranks[0]->counters().get(Counter::kMessageRounds);
  const uint64_t cycles = c.ranks[0]->counters().get(Counter::kCycles);
  EXPECT_GE(message_rounds, 1u);
  for (int i = 0; i < 3; ++i) step("cached", 16);
  for (auto& rt : c.ranks) {
    EXPECT_EQ(rt->counters().get(Counter::kCacheHits), 30u);
    EXPECT_EQ(rt->counters().get(Counter::kRequestsSent), 10u);
    // Cached steps agree through rounds of bits alone: no message round.
    EXPECT_EQ(rt->counters().get(Counter::kMessageRounds), message_rounds);
  }
  EXPECT_GT(c.ranks[0]->counters().get(Counter::kCycles), cycles);
  step("new shape", 32);
  EXPECT_GT(c.ranks[0]->counters().get(Counter::kMessageRounds), message_rounds);
  // Whichever rank announces first finds its entries stale and invalidates
  // them everywhere (the others then miss): the cycles decide which one.
  uint64_t invalidations = 0;
  for (auto& rt : c.ranks) invalidations += rt->counters().get(Counter::kCacheInvalidations);
  EXPECT_GE(invalidations, 1u);
  step("cached again", 32);
  EXPECT_EQ(c.ranks[0]->counters().get(Counter::kCacheHits), 40u);
}

TEST(Cache, CapacityZeroNegotiatesEveryStepInFull) {
  Settings s = Cluster::test_settings();
  s.cache_capacity = 0;
  Cluster c(2, s);
  for (int i = 0; i < 3; ++i) {
    c.each([&](int r, Runtime& rt) {
      float in = static_cast<float>(r + 1), out = 0;
      auto h = rt.enqueue({tensor("w", &in, &out, {})}, allreduce());
      EXPECT_EQ(wait(h), TANDEM_SUCCESS);
      EXPECT_EQ(out, 3.0f);
    });
  }
  EXPECT_EQ(c.ranks[1]->counters().get(Counter::kCacheHits), 0u);
  EXPECT_EQ(c.ranks[1]->counters().get(Counter::kRequestsSent), 3u);
}

TEST(Cache, SmallCapacityEvictsAndStaysConsistent) {
  Settings s = Cluster::test_settings();
  s.cache_capacity = 3;
  Cluster c(2, s);
  for (int i = 0; i < 4; ++i) {
    c.each([&](int r, Runtime& rt) {
      std::mt19937 rng(i * 7 + r);
      std::vector<int> order{0, 1, 2, 3, 4, 5, 6};
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<float> in(7, 1.0f), out(7, 0);
      std::vector<std::shared_ptr<HandleState>> h;
      for (int t : order)
        h.push_back(
            rt.enqueue({tensor("e" + std::to_string(t), &in[t], &out[t], {})}, allreduce()));
      for (auto& x : h) ASSERT_EQ(wait(x), TANDEM_SUCCESS) << x->error();
      for (float v : out) EXPECT_EQ(v, 2.0f);
    });
  }
}

TEST(Fusion, GroupedAllreduceSplitsAtTheThreshold) {
  Settings s = Cluster::test_settings();
  s.fusion_threshold_bytes = 3 * 1024;  // three 1 KiB tensors per batch
  Cluster c(2, s);
  c.each([&](int r, Runtime& rt) {
    std::vector<std::vector<float>> in(10, std::vector<float>(256)),
        out(10, std::vector<float>(256));
    std::vector<TensorArg> group;
    for (int t = 0; t < 10; ++t) {
      std::fill(in[t].begin(), in[t].end(), static_cast<float>(t + r));
      group.push_back(tensor("f" + std::to_string(t), in[t].data(), out[t].data(), {256}));
    }
    auto h = rt.enqueue(group, allreduce());
    ASSERT_EQ(wait(h), TANDEM_SUCCESS) << h->error();
    for (int t = 0; t < 10; ++t) EXPECT_EQ(out[t][255], static_cast<float>(2 * t + 1));
  });
  for (auto& rt : c.ranks) {
    EXPECT_EQ(rt->counters().get(Counter::kBatches), 4u);  // 3 + 3 + 3 + 1
    EXPECT_EQ(rt->counters().get(Counter::kFusedBatches), 3u);
    EXPECT_EQ(rt->counters().get(Counter::kFusedTensors), 9u);
  }
}

// A framework waits on its handles in the order it enqueued them. Once the
// first of a batch is done the rest must be too, so that it wakes once per
// batch and not once per handle (the runtime announces a batch's handles
// last-enqueued first). Rank 0 enqueues 64 tensors one by one and waits
// until all are announced; rank 1 then enqueues them as one group, so they
// all become ready in one round and run as one batch on both ranks. Every
// handle but the first has a completion callback that takes 50 us on the
// runtime thread, so that a waiter woken for the first handle while the
// others are still being announced finds them in progress.
void slow_callback(tandem_handle_t, int, void*) {
  std::this_thread::sleep_for(std::chrono::microseconds(50));
}

TEST(Fusion, TheFirstHandleOfABatchIsAnnouncedLast) {
  Cluster c(2);
  constexpr int kTensors = 64, kLen = 16;
  std::atomic<int> early{0}, wrong{0};
  for (int round = 0; round < 20; ++round) {
    c.each([&](int r, Runtime& rt) {
      std::vector<float> in(kTensors * kLen, float(r + 1)), out(kTensors * kLen, 0);
      std::vector<TensorArg> ts;
      for (int t = 0; t < kTensors; ++t)
        ts.push_back(tensor("b" + std::to_string(round) + "." + std::to_string(t), &in[t * kLen],
                            &out[t * kLen], {kLen}));
      if (r == 1) {
        const uint64_t announced = uint64_t(kTensors) * uint64_t(round + 1);
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (c.ranks[0]->counters().get(Counter::kRequestsSent) < announced) {
          if (std::chrono::steady_clock::now() > until) {
            ADD_FAILURE() << "rank 0 never announced its " << kTensors << " tensors";
            break;
          }
          std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
        if (wait(rt.enqueue(ts, allreduce())) != TANDEM_SUCCESS) ++wrong;
      } else {
        std::vector<std::shared_ptr<HandleState>> h;
        for (const TensorArg& t : ts) {
          h.push_back(rt.enqueue({t}, allreduce()));
          if (h.size() > 1) h.back()->set_callback(slow_callback, nullptr);
        }
        if (wait(h[0]) != TANDEM_SUCCESS) ++wrong;
        for (int t = 1; t < kTensors; ++t) early += !h[t]->done();
        for (auto& x : h) wrong += wait(x) != TANDEM_SUCCESS;
      }
      for (float v : out) wrong += v != 3.0f;
    });
  }
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(early.load(), 0) << "handles of the batch still in progress when the first was done";
  EXPECT_EQ(c.ranks[0]->counters().get(Counter::kBatches), 20u) << "one batch per round";
}

TEST(Collectives, BroadcastAllgatherAlltoallReducescatterBarrier) {
  Cluster c(3);
  c.each([&](int r, Runtime& rt) {
    // broadcast from rank 2
    std::vector<int32_t> b(5, r), bout(5, -1);
    OpArgs bc;
    bc.type = OpType::kBroadcast;
    bc.root = 2;
    auto hb = rt.enqueue({tensor("bc", b.data(), bout.data(), {5}, TANDEM_INT32)}, bc);
    // allgather, rank r has r+1 rows of 2
    std::vector<int64_t> g(static_cast<size_t>(2 * (r + 1)), r);
    OpArgs ag;
    ag.type = OpType::kAllgather;
    auto hg = rt.enqueue({tensor("ag", g.data(), nullptr, {r + 1, 2}, TANDEM_INT64)}, ag);
    // alltoall: rank r sends k+r rows (1 column) to rank k
    OpArgs aa;
    aa.type = OpType::kAlltoall;
    std::vector<float> a;
    for (int k = 0; k < 3; ++k) {
      aa.splits.push_back(k + r);
      for (int i = 0; i < k + r; ++i) a.push_back(static_cast<float>(r * 100 + k));
    }
    auto ha =
        rt.enqueue({tensor("a2a", a.data(), nullptr, {static_cast<int64_t>(a.size()), 1})}, aa);
    // reducescatter of 7 rows: 3, 2, 2
    std::vector<double> rs(7 * 2, r + 1.0);
    OpArgs ra;
    ra.type = OpType::kReducescatter;
    ra.op = TANDEM_SUM;
    auto hr = rt.enqueue({tensor("rs", rs.data(), nullptr, {7, 2}, TANDEM_FLOAT64)}, ra);
    OpArgs bar;
    bar.type = OpType::kBarrier;
    auto hbar = rt.enqueue({tensor("barrier", nullptr, nullptr, {0})}, bar);

    ASSERT_EQ(wait(hb), TANDEM_SUCCESS) << hb->error();
    EXPECT_EQ(bout, std::vector<int32_t>(5, 2));
    ASSERT_EQ(wait(hg), TANDEM_SUCCESS) << hg->error();
    const TensorOutput* og = hg->output(0);
    EXPECT_EQ(og->shape, (std::vector<int64_t>{6, 2}));
    std::vector<int64_t> expect_g{0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2};
    EXPECT_EQ(0, std::memcmp(og->data.data(), expect_g.data(), og->data.size()));
    ASSERT_EQ(wait(ha), TANDEM_SUCCESS) << ha->error();
    EXPECT_EQ(ha->received_splits(), (std::vector<int64_t>{r, r + 1, r + 2}));
    const TensorOutput* oa = ha->output(0);
    const float* fa = reinterpret_cast<const float*>(oa->data.data());
    size_t pos = 0;
    for (int k = 0; k < 3; ++k)
      for (int i = 0; i < r + k; ++i) EXPECT_EQ(fa[pos++], static_cast<float>(k * 100 + r));
    ASSERT_EQ(wait(hr), TANDEM_SUCCESS) << hr->error();
    const TensorOutput* orr = hr->output(0);
    EXPECT_EQ(orr->shape, (std::vector<int64_t>{r == 0 ? 3 : 2, 2}));
    EXPECT_EQ(reinterpret_cast<const double*>(orr->data.data())[0], 6.0);
    EXPECT_EQ(wait(hbar), TANDEM_SUCCESS);
  });
}

TEST(Collectives, ArgumentErrorsAreImmediate) {
  Cluster c(2);
  Runtime& rt = *c.ranks[0];
  float x = 1, y = 0;
  EXPECT_THROW(rt.enqueue({tensor("", &x, &y, {})}, allreduce()), InvalidArgument);
  EXPECT_THROW(rt.enqueue({tensor("n", nullptr, &y, {3})}, allreduce()), InvalidArgument);
  EXPECT_THROW(rt.enqueue({tensor("n", &x, &y, {1}, 42)}, allreduce()), InvalidArgument);
  // GPU tensors are negotiated, not refused here (gpu_routing_test.cc); only
  // a device index that is neither -1 nor a CUDA index is an argument error.
  TensorArg gpu = tensor("g", &x, &y, {});
  gpu.device = -2;
  EXPECT_THROW(rt.enqueue({gpu}, allreduce()), InvalidArgument);
  OpArgs scaled = allreduce();
  scaled.prescale = 2;
  EXPECT_THROW(rt.enqueue({tensor("i", &x, &y, {}, TANDEM_INT32)}, scaled), InvalidArgument);
  OpArgs aa;
  aa.type = OpType::kAlltoall;
  aa.splits = {1, 1};
  EXPECT_THROW(rt.enqueue({tensor("a", &x, nullptr, {3})}, aa), InvalidArgument);
  OpArgs bc;
  bc.type = OpType::kBroadcast;
  bc.root = 5;
  EXPECT_THROW(rt.enqueue({tensor("b", &x, &y, {})}, bc), InvalidArgument);
  EXPECT_THROW(rt.enqueue({tensor("p", &x, &y, {})}, allreduce(TANDEM_SUM, 9)), InvalidArgument);
}

// A data path whose peer is gone: every exchange fails as the real one
// would after a SIGKILL.
class LostPeerDataPath : public ThreadDataPath {
 public:
  using ThreadDataPath::ThreadDataPath;
  std::vector<Bytes> exchange(const Bytes&) override {
    throw PeerLostError("rank 1 (node n2) was lost: connection reset");
  }
};

TEST(Failure, LostPeerFailsEveryPendingHandleAndLaterCalls) {
  class Factory : public DataPathFactory {
   public:
    std::unique_ptr<DataPath> create(const std::vector<int>&) override {
      return std::make_unique<LostPeerDataPath>(std::make_shared<MemoryWorld>(1), 0);
    }
  };
  Settings s = Cluster::test_settings();
  s.idle_wait_ms = 10000;  // the loop starts its first cycle when work arrives
  Runtime rt(0, 1, std::make_unique<Factory>(), s);
  float x = 1, y = 0, z = 0;
  std::shared_ptr<HandleState> a, b;
  try {
    a = rt.enqueue({tensor("a", &x, &y, {})}, allreduce());
    b = rt.enqueue({tensor("b", &x, &z, {})}, allreduce());
  } catch (const PeerLostError&) {
    // The loop may already have failed before the second enqueue.
  }
  ASSERT_TRUE(a);
  EXPECT_EQ(wait(a), TANDEM_ERR_PEER_LOST);
  EXPECT_NE(a->error().find("rank 1"), std::string::npos);
  if (b) { EXPECT_EQ(wait(b), TANDEM_ERR_PEER_LOST); }
  EXPECT_THROW(rt.enqueue({tensor("c", &x, &y, {})}, allreduce()), PeerLostError);
  EXPECT_THROW(rt.join(), PeerLostError);
}

TEST(Failure, FinalizeOnOneRankFailsPendingWorkOnTheOthers) {
  Cluster c(2);
  float x = 1, y = 0;
  auto h = c.ranks[1]->enqueue({tensor("orphan", &x, &y, {})}, allreduce());
  c.ranks[0].reset();
  EXPECT_EQ(wait(h), TANDEM_ERR_ABORTED);
  EXPECT_NE(h->error().find("rank(s) 0 shut down"), std::string::npos) << h->error();
}

}  // namespace
}  // namespace tandem::runtime::testing
