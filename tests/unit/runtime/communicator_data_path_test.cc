// The runtime over the engine's real Communicator (ranks as threads over the
// in-memory bootstrap; shared memory inside a "node", the memory transport
// between "nodes"): the adapter, its fusion buffer in the shared segment,
// the process-set bootstrap (SubsetBootstrap) and every collective.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <numeric>
#include <random>

#include "bootstrap/memory_bootstrap.h"
#include "bootstrap/subset_bootstrap.h"
#include "cluster.h"
#include "common/errors.h"
#include "runtime/communicator_data_path.h"
#include "transport/memory/memory_transport.h"

namespace tandem::runtime::testing {
namespace {

CommunicatorOptions options() {
  CommunicatorOptions o;
  o.timeout = std::chrono::seconds(30);
  o.shm_chunk_bytes = 4096;
  o.shm_arena_bytes = 0;  // the factory sizes it from the fusion threshold
  return o;
}

// One Runtime per rank, built concurrently (creation is collective), each
// over its own job bootstrap + Communicator as tandem_init builds them.
struct RealCluster {
  RealCluster(int n, std::vector<int> layout, Settings s = Cluster::test_settings())
      : world(std::make_shared<MemoryWorld>(n, layout)),
        net(make_memory_network()),
        jobs(n),
        ranks(n) {
    std::vector<std::thread> t;
    std::vector<std::string> errors(n);
    for (int r = 0; r < n; ++r)
      t.emplace_back([&, r] {
        try {
          auto connect = [this](Bootstrap& b, const std::vector<int>& m,
                                std::chrono::milliseconds to,
                                const std::vector<int>&) { return connect_memory(net, b, m, to); };
          jobs[r] = std::make_unique<MemoryBootstrap>(world, r);
          auto f = std::make_unique<CommunicatorDataPathFactory>(*jobs[r], connect, options(),
                                                                 s.fusion_threshold_bytes);
          ranks[r] = std::make_unique<Runtime>(r, n, std::move(f), s);
        } catch (const std::exception& e) { errors[r] = e.what(); }
      });
    for (auto& x : t) x.join();
    for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  }
  ~RealCluster() {
    std::vector<std::thread> t;
    for (auto& rt : ranks)
      if (rt) t.emplace_back([&rt] { rt.reset(); });
    for (auto& x : t) x.join();
  }
  void each(const std::function<void(int, Runtime&)>& body) {
    std::vector<std::thread> t;
    for (int r = 0; r < static_cast<int>(ranks.size()); ++r)
      t.emplace_back([&, r] { body(r, *ranks[r]); });
    for (auto& x : t) x.join();
  }
  std::shared_ptr<MemoryWorld> world;
  std::shared_ptr<MemoryNetwork> net;
  std::vector<std::unique_ptr<Bootstrap>> jobs;
  std::vector<std::unique_ptr<Runtime>> ranks;
};

TEST(SubsetBootstrap, RenumbersRanksAndNodes) {
  Identity parent;
  parent.rank = 5;
  parent.size = 6;
  parent.node_of_rank = {0, 0, 0, 1, 1, 1};
  parent.cross_size = 2;
  Identity id = SubsetBootstrap::subset_identity(parent, {1, 4, 5}, "j.ps1");
  EXPECT_EQ(id.rank, 2);
  EXPECT_EQ(id.size, 3);
  EXPECT_EQ(id.node_of_rank, (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(id.local_rank, 1);
  EXPECT_EQ(id.local_size, 2);
  EXPECT_EQ(id.cross_rank, 1);
  EXPECT_EQ(id.cross_size, 2);
  EXPECT_EQ(id.job_id, "j.ps1");
  EXPECT_THROW(SubsetBootstrap::subset_identity(parent, {1, 4}, "x"), InvalidArgument);
}

class OverCommunicator : public ::testing::TestWithParam<std::vector<int>> {};

// Random orders, several steps (the second on takes the cache path), every
// tensor checked on every rank.
TEST_P(OverCommunicator, RandomOrdersFusedAllreduceIsRightOnEveryRank) {
  const std::vector<int> layout = GetParam();
  const int n = std::accumulate(layout.begin(), layout.end(), 0);
  RealCluster c(n, layout);
  std::atomic<int> wrong{0};
  c.each([&](int r, Runtime& rt) {
    for (int step = 0; step < 4; ++step) {
      std::mt19937 rng(step * 977 + r);
      const int kTensors = 30;
      std::vector<int> order(kTensors);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<std::vector<float>> in(kTensors), out(kTensors);
      std::vector<std::shared_ptr<HandleState>> h(kTensors);
      for (int t : order) {
        const size_t len = 1 + static_cast<size_t>(t * 389 % 5000);
        in[t].resize(len);
        out[t].assign(len, -1);
        for (size_t i = 0; i < len; ++i) in[t][i] = static_cast<float>(r * 1000 + t + i % 13);
        h[t] = rt.enqueue({tensor("t" + std::to_string(t), in[t].data(), out[t].data(),
                                  {static_cast<int64_t>(len)})},
                          allreduce());
      }
      for (int t = 0; t < kTensors; ++t) {
        if (wait(h[t]) != TANDEM_SUCCESS) {
          ADD_FAILURE() << h[t]->error();
          ++wrong;
          continue;
        }
        for (size_t i = 0; i < out[t].size(); ++i) {
          float expect = 0;
          for (int k = 0; k < n; ++k) expect += static_cast<float>(k * 1000 + t + i % 13);
          if (out[t][i] != expect) ++wrong;
        }
      }
    }
    EXPECT_GT(rt.counters().get(Counter::kFusedBatches), 0u);
  });
  EXPECT_EQ(wrong.load(), 0);
}

// On one node an idle runtime sleeps on the doorbell: no cycles at all while
// nothing is enqueued (with the idle timer it ran one every TANDEM_IDLE_WAIT),
// and a tensor enqueued on one rank at a time still completes (the others
// wake for its cycles).
TEST(Doorbell, IdleRuntimeRunsNoCyclesAndWakesForWork) {
  RealCluster c(3, {3});
  c.each([&](int r, Runtime& rt) {
    float x = static_cast<float>(r + 1), y = 0;
    ASSERT_EQ(wait(rt.enqueue({tensor("warm", &x, &y, {1})}, allreduce())), TANDEM_SUCCESS);
    EXPECT_EQ(y, 6.0f);
  });
  std::vector<uint64_t> before(3);
  for (int r = 0; r < 3; ++r) before[r] = c.ranks[r]->counters().get(Counter::kCycles);
  EXPECT_EQ(before[0], before[1]);
  EXPECT_EQ(before[1], before[2]);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(c.ranks[r]->counters().get(Counter::kCycles), before[r]) << "rank " << r;
  // Ranks enqueue one after the other, far apart: each enqueue must wake the
  // idle peers (no timer would).
  c.each([&](int r, Runtime& rt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30 * r));
    float x = static_cast<float>(r + 1), y = 0;
    ASSERT_EQ(wait(rt.enqueue({tensor("late", &x, &y, {1})}, allreduce())), TANDEM_SUCCESS);
    EXPECT_EQ(y, 6.0f);
  });
}

class WithProcessSets : public OverCommunicator {};

TEST_P(WithProcessSets, ProcessSetsAndEveryCollective) {
  const std::vector<int> layout = GetParam();
  const int n = std::accumulate(layout.begin(), layout.end(), 0);
  RealCluster c(n, layout);
  c.each([&](int r, Runtime& rt) {
    // A set of the odd ranks plus rank 0, created while the world goes on.
    std::vector<int> members{0};
    for (int k = 1; k < n; k += 2) members.push_back(k);
    const int set = rt.add_process_set(members);
    const bool in_set = std::find(members.begin(), members.end(), r) != members.end();
    for (int step = 0; step < 3; ++step) {
      double gin = r + 1, gout = 0, sin = r + 1, sout = 0;
      std::shared_ptr<HandleState> hs;
      if (in_set)
        hs = rt.enqueue({tensor("s", &sin, &sout, {}, TANDEM_FLOAT64)}, allreduce(TANDEM_SUM, set));
      auto hg = rt.enqueue({tensor("g", &gin, &gout, {}, TANDEM_FLOAT64)}, allreduce());
      ASSERT_EQ(wait(hg), TANDEM_SUCCESS) << hg->error();
      EXPECT_EQ(gout, n * (n + 1) / 2.0);
      if (hs) {
        ASSERT_EQ(wait(hs), TANDEM_SUCCESS) << hs->error();
        double expect = 0;
        for (int m : members) expect += m + 1;
        EXPECT_EQ(sout, expect);
      }
    }
    // broadcast from the last rank
    std::vector<int32_t> b(5, r), bout(5, -1);
    OpArgs bc;
    bc.type = OpType::kBroadcast;
    bc.root = n - 1;
    auto hb = rt.enqueue({tensor("bc", b.data(), bout.data(), {5}, TANDEM_INT32)}, bc);
    // allgather: rank r has r+1 rows of 2
    std::vector<int64_t> g(static_cast<size_t>(2 * (r + 1)), r);
    OpArgs ag;
    ag.type = OpType::kAllgather;
    auto hg = rt.enqueue({tensor("ag", g.data(), nullptr, {r + 1, 2}, TANDEM_INT64)}, ag);
    // alltoall: k+r rows to rank k
    OpArgs aa;
    aa.type = OpType::kAlltoall;
    std::vector<float> a;
    for (int k = 0; k < n; ++k) {
      aa.splits.push_back(k + r);
      for (int i = 0; i < k + r; ++i) a.push_back(static_cast<float>(r * 100 + k));
    }
    auto ha =
        rt.enqueue({tensor("a2a", a.data(), nullptr, {static_cast<int64_t>(a.size()), 1})}, aa);
    // reducescatter with scales: (2 * sum of (k+1)) * 0.25
    std::vector<double> rs(static_cast<size_t>(2 * (n + 1)), r + 1.0);
    OpArgs ra;
    ra.type = OpType::kReducescatter;
    ra.prescale = 2.0;
    ra.postscale = 0.25;
    auto hr = rt.enqueue({tensor("rs", rs.data(), nullptr, {n + 1, 2}, TANDEM_FLOAT64)}, ra);

    ASSERT_EQ(wait(hb), TANDEM_SUCCESS) << hb->error();
    EXPECT_EQ(bout, std::vector<int32_t>(5, n - 1));
    ASSERT_EQ(wait(hg), TANDEM_SUCCESS) << hg->error();
    const TensorOutput* og = hg->output(0);
    EXPECT_EQ(og->shape, (std::vector<int64_t>{n * (n + 1) / 2, 2}));
    const int64_t* gv = reinterpret_cast<const int64_t*>(og->data.data());
    size_t pos = 0;
    for (int k = 0; k < n; ++k)
      for (int i = 0; i < 2 * (k + 1); ++i) EXPECT_EQ(gv[pos++], k);
    ASSERT_EQ(wait(ha), TANDEM_SUCCESS) << ha->error();
    const float* fa = reinterpret_cast<const float*>(ha->output(0)->data.data());
    pos = 0;
    for (int k = 0; k < n; ++k)
      for (int i = 0; i < r + k; ++i) EXPECT_EQ(fa[pos++], static_cast<float>(k * 100 + r));
    ASSERT_EQ(wait(hr), TANDEM_SUCCESS) << hr->error();
    const TensorOutput* orr = hr->output(0);
    EXPECT_EQ(orr->shape[0], r == 0 ? 2 : 1);
    EXPECT_EQ(reinterpret_cast<const double*>(orr->data.data())[0], n * (n + 1) / 2.0 * 0.5);
    rt.remove_process_set(set);
  });
}

INSTANTIATE_TEST_SUITE_P(Layouts, OverCommunicator,
                         ::testing::Values(std::vector<int>{1}, std::vector<int>{2},
                                           std::vector<int>{4}, std::vector<int>{2, 2},
                                           std::vector<int>{2, 1}, std::vector<int>{1, 1, 1}),
                         [](const auto& info) {
                           std::string s = "nodes";
                           for (int k : info.param) s += "_" + std::to_string(k);
                           return s;
                         });

INSTANTIATE_TEST_SUITE_P(Layouts, WithProcessSets,
                         ::testing::Values(std::vector<int>{3}, std::vector<int>{4},
                                           std::vector<int>{2, 2}, std::vector<int>{2, 1},
                                           std::vector<int>{1, 1, 1}),
                         [](const auto& info) {
                           std::string s = "nodes";
                           for (int k : info.param) s += "_" + std::to_string(k);
                           return s;
                         });

// The fusion buffer lies in the arena up to the threshold the arena was
// sized for, and on the heap beyond it; both reduce correctly.
TEST(FusionBuffer, SharedUpToTheArenaThenHeap) {
  auto world = std::make_shared<MemoryWorld>(2, std::vector<int>{2});
  std::vector<std::thread> t;
  std::vector<std::string> errors(2);
  for (int r = 0; r < 2; ++r)
    t.emplace_back([&, r] {
      try {
        MemoryBootstrap job(world, r);
        CommunicatorDataPathFactory f(job, nullptr, options(), 64 << 10);
        auto dp = f.create({0, 1});
        auto* cdp = dynamic_cast<CommunicatorDataPath*>(dp.get());
        for (size_t bytes : {size_t{1000}, size_t{60000}, size_t{200000}, size_t{4096}}) {
          float* buf = static_cast<float*>(dp->fusion_buffer(bytes));
          const bool shared = bytes <= (64 << 10);
          if (cdp->fusion_buffer_is_shared() != shared)
            throw Error(std::to_string(bytes) + " bytes: shared is " +
                        std::to_string(cdp->fusion_buffer_is_shared()));
          if (shared != cdp->communicator().is_shared(buf, bytes))
            throw Error("is_shared disagrees for " + std::to_string(bytes));
          const size_t count = bytes / sizeof(float);
          for (size_t i = 0; i < count; ++i) buf[i] = static_cast<float>(r + i % 5);
          dp->allreduce(buf, count, TANDEM_FLOAT32, TANDEM_SUM, 1.0, 1.0);
          for (size_t i = 0; i < count; ++i)
            if (buf[i] != static_cast<float>(1 + 2 * (i % 5)))
              throw Error("wrong sum at " + std::to_string(i) + " of " + std::to_string(bytes));
        }
      } catch (const std::exception& e) { errors[r] = e.what(); }
    });
  for (auto& x : t) x.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
}

}  // namespace
}  // namespace tandem::runtime::testing
