// GPU tensors in the runtime, without a GPU: ranks as threads, each with a
// device path. With the real NCCL device path on a machine without a GPU,
// a device tensor fails on every rank with UNSUPPORTED and the probe's
// reason, and the next host step works. With a fake GpuBackend (host memory
// standing in for device memory, collectives done by a rendezvous of the
// rank threads) the routing itself is checked: which requests reach the
// backend (fusion, counts, roots, streams), the NCCL id exchange over the
// set's host path, values, device results, and the abort on a broken runtime.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <map>
#include <thread>

#include "cluster.h"
#include "common/errors.h"
#include "gpu/availability.h"
#include "gpu/gpu_backend.h"
#include "gpu/unique_id_exchange.h"
#include "runtime/gpu_data_path.h"

namespace tandem::runtime::testing {
namespace {

using gpu::GpuBackend;
using gpu::GpuOpKind;
using gpu::GpuRequest;

// ----------------------------------------------------------- the fake GPU

// Every rank thread posts its request; the last to arrive computes every
// member's result (float32 only) while the others wait, so no thread reads
// a buffer another is writing.
class FakeFabric {
 public:
  void run(int set_id, int index, int n, const GpuRequest& req) {
    std::unique_lock<std::mutex> lock(mu_);
    auto key = std::make_pair(set_id, seq_[{set_id, index}]++);
    Round& round = rounds_[key];
    round.posted.resize(static_cast<size_t>(n));
    round.posted[static_cast<size_t>(index)] = req;
    if (++round.arrived == n) {
      compute(round.posted);
      round.done = true;
      cv_.notify_all();
    } else if (!cv_.wait_for(lock, std::chrono::seconds(30), [&] { return round.done; })) {
      throw TimeoutError("fake fabric: the other members never arrived");
    }
    if (++round.left == n) rounds_.erase(key);
  }

 private:
  struct Round {
    std::vector<GpuRequest> posted;
    int arrived = 0, left = 0;
    bool done = false;
  };
  static const float* in(const GpuRequest& q, size_t t = 0) {
    return static_cast<const float*>(q.tensors[t].send);
  }
  static float* out(const GpuRequest& q, size_t t = 0) {
    return static_cast<float*>(q.tensors[t].recv);
  }
  static void compute(std::vector<GpuRequest>& all) {
    const GpuRequest& q0 = all[0];
    if (q0.dtype != TANDEM_FLOAT32) throw UnsupportedError("fake fabric: float32 only");
    const size_t n = all.size();
    switch (q0.kind) {
      case GpuOpKind::kAllreduce:
        for (size_t t = 0; t < q0.tensors.size(); ++t) {
          std::vector<float> sum(q0.tensors[t].count, 0.0f);
          for (auto& q : all)
            for (size_t i = 0; i < sum.size(); ++i) sum[i] += float(q.prescale) * in(q, t)[i];
          const double post = q0.op == TANDEM_AVERAGE ? q0.postscale / double(n) : q0.postscale;
          for (auto& q : all)
            for (size_t i = 0; i < sum.size(); ++i) out(q, t)[i] = float(post) * sum[i];
        }
        break;
      case GpuOpKind::kBroadcast: {
        std::vector<float> v(in(all[q0.root]), in(all[q0.root]) + q0.tensors[0].count);
        for (auto& q : all) std::copy(v.begin(), v.end(), out(q));
        break;
      }
      case GpuOpKind::kAllgather:
        for (auto& q : all) {
          size_t at = 0;
          for (size_t k = 0; k < n; ++k) {
            std::memcpy(out(q) + at, in(all[k]), q.recv_counts[k] * 4);
            at += q.recv_counts[k];
          }
        }
        break;
      case GpuOpKind::kAlltoall:
        for (size_t r = 0; r < n; ++r) {
          size_t at = 0;
          for (size_t k = 0; k < n; ++k) {
            size_t from = 0;
            for (size_t j = 0; j < r; ++j) from += all[k].send_counts[j];
            std::memcpy(out(all[r]) + at, in(all[k]) + from, all[r].recv_counts[k] * 4);
            at += all[r].recv_counts[k];
          }
        }
        break;
      case GpuOpKind::kReducescatter: {
        size_t at = 0;
        for (size_t r = 0; r < n; ++r) {
          for (size_t i = 0; i < q0.recv_counts[r]; ++i) {
            float s = 0;
            for (auto& q : all) s += in(q)[at + i];
            out(all[r])[i] = s;
          }
          at += q0.recv_counts[r];
        }
        break;
      }
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<int, int>, int> seq_;  // (set, member index) -> next round
  std::map<std::pair<int, uint64_t>, Round> rounds_;
};

class CountingIds : public gpu::UniqueIdSource {
 public:
  gpu::UniqueId create() override {
    static std::atomic<uint8_t> next{1};
    gpu::UniqueId id{};
    id[0] = next++;
    return id;
  }
};

struct FakeLog {
  std::mutex mu;
  std::vector<GpuRequest> requests;
  std::map<int, gpu::UniqueId> ids;  // by set
  std::vector<std::string> aborts;
  int allocations = 0;
  // Scheduling policy of the thread that enqueued, and of a thread it
  // started (as NCCL starts its proxies), per request.
  std::vector<int> policies;
};

int current_policy() {
  int policy = -1;
  sched_param p{};
  pthread_getschedparam(pthread_self(), &policy, &p);
  return policy;
}

class FakeBackend : public GpuBackend {
 public:
  FakeBackend(int rank, int device, FakeFabric& fabric, FakeLog& log)
      : rank_(rank), device_(device), fabric_(fabric), log_(log) {}
  void add_process_set(Bootstrap& boot, int set_id, std::vector<int> members) override {
    CountingIds ids;
    auto id = gpu::exchange_unique_id(boot, set_id, members, ids, std::chrono::seconds(30));
    std::sort(members.begin(), members.end());
    members_[set_id] = members;
    std::lock_guard<std::mutex> lock(log_.mu);
    if (id) log_.ids[set_id] = *id;
  }
  void remove_process_set(int set_id) override { members_.erase(set_id); }
  std::shared_ptr<gpu::GpuWork> enqueue(const GpuRequest& req) override {
    int helper = -1;
    std::thread([&helper] { helper = current_policy(); }).join();
    {
      std::lock_guard<std::mutex> lock(log_.mu);
      log_.requests.push_back(req);
      log_.policies.push_back(current_policy());
      log_.policies.push_back(helper);
    }
    const auto& m = members_.at(req.process_set);
    const int index = static_cast<int>(std::find(m.begin(), m.end(), rank_) - m.begin());
    fabric_.run(req.process_set, index, static_cast<int>(m.size()), req);
    return nullptr;  // done already
  }
  bool test(gpu::GpuWork&) override { return true; }
  void wait(gpu::GpuWork&) override {}
  void abort_all(const std::string& reason) override {
    std::lock_guard<std::mutex> lock(log_.mu);
    log_.aborts.push_back(reason);
  }
  std::shared_ptr<void> allocate(size_t bytes) override {
    std::lock_guard<std::mutex> lock(log_.mu);
    ++log_.allocations;
    return std::shared_ptr<void>(std::malloc(bytes ? bytes : 1), std::free);
  }
  void copy(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  int device() const override { return device_; }
  std::string describe() const override { return "fake GPU " + std::to_string(device_); }

 private:
  int rank_, device_;
  FakeFabric& fabric_;
  FakeLog& log_;
  std::map<int, std::vector<int>> members_;
};

// Runtimes as threads, each with a GpuDataPath whose backend comes from
// make_backend(rank) (which may throw, as GpuBackend::create does).
struct GpuCluster {
  using MakeBackend = std::function<std::unique_ptr<GpuBackend>(int rank)>;
  GpuCluster(int n, MakeBackend make_backend) : threads(n), logs(static_cast<size_t>(n)) {
    for (int r = 0; r < n; ++r) {
      Identity me;
      me.rank = r;
      me.size = n;
      me.local_rank = r;
      me.local_size = n;
      auto device =
          std::make_unique<GpuDataPath>(me, [make_backend, r] { return make_backend(r); });
      ranks.push_back(std::make_unique<Runtime>(r, n, threads.factory(r), settings(), nullptr,
                                                std::move(device)));
    }
  }
  // SCHED_BATCH for the runtime thread, so that the switch to the default
  // policy around device work is what the policy checks below see.
  static Settings settings() {
    Settings s = Cluster::test_settings();
    s.batch_scheduling = true;
    return s;
  }
  void each(const std::function<void(int, Runtime&)>& body) {
    std::vector<std::thread> t;
    for (int r = 0; r < static_cast<int>(ranks.size()); ++r)
      t.emplace_back([&, r] { body(r, *ranks[r]); });
    for (auto& x : t) x.join();
  }
  ThreadCluster threads;
  FakeFabric fabric;
  std::vector<FakeLog> logs;
  std::vector<std::unique_ptr<Runtime>> ranks;
};

TensorArg on_gpu(TensorArg t, int device = 0, void* stream = nullptr) {
  t.device = device;
  t.stream = stream;
  return t;
}

// A host allreduce after a failed GPU one: the runtime is still healthy.
void expect_host_step_works(GpuCluster& c) {
  const int n = static_cast<int>(c.ranks.size());
  std::atomic<int> wrong{0};
  c.each([&](int r, Runtime& rt) {
    float x = float(r + 1), y = 0;
    if (wait(rt.enqueue({tensor("after", &x, &y, {})}, allreduce())) != TANDEM_SUCCESS ||
        y != float(n * (n + 1) / 2))
      ++wrong;
  });
  EXPECT_EQ(wrong.load(), 0);
}

// ------------------------------------------------------- no GPU, for real

TEST(GpuRouting, NoGpuHereFailsEveryRankWithTheProbesReasonAndHostGoesOn) {
  const gpu::GpuStatus status = gpu::probe(gpu::GpuSettings::from(gpu::process_environment()));
  if (status.available) GTEST_SKIP() << "a GPU is usable here: " << status.reason;
  const int n = 3;
  std::vector<std::unique_ptr<Runtime>> ranks;
  ThreadCluster threads(n);
  for (int r = 0; r < n; ++r) {
    Identity me;
    me.rank = r;
    me.size = n;
    ranks.push_back(std::make_unique<Runtime>(r, n, threads.factory(r), Cluster::test_settings(),
                                              nullptr,
                                              make_gpu_data_path(me, std::chrono::seconds(30))));
  }
  std::vector<std::string> errors(n);
  std::vector<tandem_result_t> codes(n);
  std::vector<std::thread> t;
  for (int r = 0; r < n; ++r)
    t.emplace_back([&, r] {
      float x[4] = {1, 2, 3, 4}, y[4] = {};
      auto h = ranks[r]->enqueue({on_gpu(tensor("grad.gpu", x, y, {4}))}, allreduce());
      codes[r] = wait(h);
      errors[r] = h->error();
      float a = 1, b = 0;
      if (wait(ranks[r]->enqueue({tensor("host", &a, &b, {})}, allreduce())) != TANDEM_SUCCESS ||
          b != float(n))
        errors[r] += " [the host step after it failed]";
    });
  for (auto& x : t) x.join();
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(codes[r], TANDEM_ERR_UNSUPPORTED) << errors[r];
    EXPECT_EQ(errors[r], errors[0]) << "every rank reports the same message";
    EXPECT_NE(errors[r].find("allreduce 'grad.gpu'"), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find("ranks 0,1,2"), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find(status.reason), std::string::npos) << errors[r];
  }
}

TEST(GpuRouting, RuntimeWithoutDevicePathSaysSoOnEveryRank) {
  Cluster c(2);
  c.each([&](int, Runtime& rt) {
    float x = 1, y = 0;
    auto h = rt.enqueue({on_gpu(tensor("g", &x, &y, {}))}, allreduce());
    EXPECT_EQ(wait(h), TANDEM_ERR_UNSUPPORTED);
    EXPECT_NE(h->error().find("no GPU path"), std::string::npos) << h->error();
  });
}

TEST(GpuRouting, DeviceDisagreementIsAMismatchNamingTheField) {
  Cluster c(2);
  std::vector<std::string> errors(2);
  c.each([&](int r, Runtime& rt) {
    float x = 1, y = 0;
    TensorArg t = tensor("w", &x, &y, {});
    if (r == 0) t = on_gpu(t);
    auto h = rt.enqueue({t}, allreduce());
    EXPECT_EQ(wait(h), TANDEM_ERR_MISMATCH);
    errors[r] = h->error();
    float a = 2, b = 0;
    EXPECT_EQ(wait(rt.enqueue({tensor("next", &a, &b, {})}, allreduce())), TANDEM_SUCCESS);
    EXPECT_EQ(b, 4.0f);
  });
  EXPECT_EQ(errors[0], errors[1]);
  EXPECT_NE(errors[0].find("disagree on device: rank 0 0; rank 1 -1"), std::string::npos)
      << errors[0];
}

TEST(GpuRouting, NegativeDeviceOtherThanCpuIsRejectedAtOnce) {
  Cluster c(1);
  float x = 1, y = 0;
  EXPECT_THROW(c.ranks[0]->enqueue({on_gpu(tensor("bad", &x, &y, {}), -2)}, allreduce()),
               InvalidArgument);
}

// ------------------------------------------------- routing, with a fake GPU

GpuCluster::MakeBackend fakes(GpuCluster* c, int device = 0) {
  return [c, device](int r) -> std::unique_ptr<GpuBackend> {
    return std::make_unique<FakeBackend>(r, device, c->fabric, c->logs[static_cast<size_t>(r)]);
  };
}

TEST(GpuRouting, FusedAllreduceAndEveryCollectiveReachTheBackendWithRightValues) {
  const int n = 3;
  GpuCluster* self = nullptr;
  GpuCluster c(n, [&self](int r) { return fakes(self)(r); });
  self = &c;
  std::atomic<int> wrong{0};
  c.each([&](int r, Runtime& rt) {
    void* stream = reinterpret_cast<void*>(uintptr_t(0x1000 + r));
    // Three allreduces in one grouped call: one fused NCCL request.
    std::vector<std::vector<float>> in(3), out(3);
    std::vector<TensorArg> ts;
    for (int t = 0; t < 3; ++t) {
      in[t].assign(size_t(t + 2), float(r + 1) * float(t + 1));
      out[t].assign(in[t].size(), -1);
      ts.push_back(on_gpu(
          tensor("ar" + std::to_string(t), in[t].data(), out[t].data(), {int64_t(in[t].size())}), 0,
          stream));
    }
    OpArgs avg = allreduce(TANDEM_AVERAGE);
    if (wait(rt.enqueue(ts, avg)) != TANDEM_SUCCESS) ++wrong;
    for (int t = 0; t < 3; ++t)
      for (float v : out[t]) wrong += v != 2.0f * float(t + 1);  // mean of 1..3 times t+1

    // Broadcast from global rank 2.
    float b[2] = {float(r), float(r)};
    OpArgs bc;
    bc.type = OpType::kBroadcast;
    bc.root = 2;
    if (wait(rt.enqueue({on_gpu(tensor("bc", b, b, {2}))}, bc)) != TANDEM_SUCCESS) ++wrong;
    wrong += b[0] != 2.0f || b[1] != 2.0f;

    // Uneven allgather: rank r gives r+1 rows of 2.
    std::vector<float> g(size_t(2 * (r + 1)), float(r));
    OpArgs ag;
    ag.type = OpType::kAllgather;
    auto h = rt.enqueue({on_gpu(tensor("ag", g.data(), nullptr, {r + 1, 2}))}, ag);
    if (wait(h) != TANDEM_SUCCESS) ++wrong;
    const TensorOutput* o = h->output(0);
    if (!o || !o->device || o->device->bytes != 12 * 4 || o->shape != std::vector<int64_t>{6, 2}) {
      ++wrong;
    } else {
      std::vector<float> host(12);
      o->device->copy(host.data(), o->device->memory.get(), o->device->bytes);
      const std::vector<float> expect = {0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2};
      wrong += host != expect;
    }

    // Alltoall with splits: rank r sends k+1 rows to rank k.
    std::vector<float> a(6);
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(r * 10) + float(i);
    OpArgs at;
    at.type = OpType::kAlltoall;
    at.splits = {1, 2, 3};
    h = rt.enqueue({on_gpu(tensor("a2a", a.data(), nullptr, {6}))}, at);
    if (wait(h) != TANDEM_SUCCESS) ++wrong;
    o = h->output(0);
    if (!o || !o->device || h->received_splits() != std::vector<int64_t>(3, r + 1)) {
      ++wrong;
    } else {
      std::vector<float> host(size_t(3 * (r + 1)));
      o->device->copy(host.data(), o->device->memory.get(), host.size() * 4);
      const size_t from = size_t(r * (r + 1) / 2);  // rows before mine in each sender
      for (int k = 0; k < n; ++k)
        for (int j = 0; j <= r; ++j)
          wrong += host[size_t(k * (r + 1) + j)] != float(k * 10) + float(from + size_t(j));
    }

    // Uneven reducescatter: 4 rows over 3 ranks -> 2,1,1.
    std::vector<float> s(4);
    for (size_t i = 0; i < 4; ++i) s[i] = float(i) + float(r);
    OpArgs rs;
    rs.type = OpType::kReducescatter;
    h = rt.enqueue({on_gpu(tensor("rs", s.data(), nullptr, {4}))}, rs);
    if (wait(h) != TANDEM_SUCCESS) ++wrong;
    o = h->output(0);
    const std::vector<std::vector<float>> mine = {{3, 6}, {9}, {12}};  // sum over r of i + r
    if (!o || !o->device || o->device->bytes != mine[size_t(r)].size() * 4) {
      ++wrong;
    } else {
      std::vector<float> host(mine[size_t(r)].size());
      o->device->copy(host.data(), o->device->memory.get(), host.size() * 4);
      wrong += host != mine[size_t(r)];
    }
  });
  EXPECT_EQ(wrong.load(), 0);

  // What the backend saw, the same on every rank: one fused allreduce of
  // three tensors (streams passed), then one request per other collective.
  for (int r = 0; r < n; ++r) {
    const auto& reqs = c.logs[size_t(r)].requests;
    ASSERT_EQ(reqs.size(), 5u) << "rank " << r;
    EXPECT_EQ(reqs[0].kind, GpuOpKind::kAllreduce);
    EXPECT_EQ(reqs[0].tensors.size(), 3u);
    EXPECT_EQ(reqs[0].op, TANDEM_AVERAGE);
    EXPECT_EQ(reqs[0].framework_streams,
              std::vector<void*>(3, reinterpret_cast<void*>(uintptr_t(0x1000 + r))));
    EXPECT_EQ(reqs[1].kind, GpuOpKind::kBroadcast);
    EXPECT_EQ(reqs[1].root, 2);
    EXPECT_EQ(reqs[2].recv_counts, (std::vector<size_t>{2, 4, 6}));
    EXPECT_EQ(reqs[3].send_counts, (std::vector<size_t>{1, 2, 3}));
    EXPECT_EQ(reqs[4].recv_counts, (std::vector<size_t>{2, 1, 1}));
    EXPECT_EQ(c.logs[size_t(r)].allocations, 3);
    // The runtime thread is SCHED_BATCH here (GpuCluster::settings), but
    // device work (and the threads NCCL starts from it) runs under the
    // default policy.
    EXPECT_EQ(c.logs[size_t(r)].policies, std::vector<int>(10, SCHED_OTHER)) << "rank " << r;
  }
  // One NCCL id for the global set, created once, the same on every member.
  for (int r = 1; r < n; ++r) EXPECT_EQ(c.logs[size_t(r)].ids.at(0), c.logs[0].ids.at(0));
  expect_host_step_works(c);
}

TEST(GpuRouting, ProcessSetGetsItsOwnIdFromItsMembersOnly) {
  const int n = 3;
  GpuCluster* self = nullptr;
  GpuCluster c(n, [&self](int r) { return fakes(self)(r); });
  self = &c;
  std::atomic<int> wrong{0};
  c.each([&](int r, Runtime& rt) {
    const int set = rt.add_process_set({0, 2});
    if (r == 1) return;
    float x[2] = {float(r), 1}, y[2] = {};
    if (wait(rt.enqueue({on_gpu(tensor("ps", x, y, {2}))}, allreduce(TANDEM_SUM, set))) !=
            TANDEM_SUCCESS ||
        y[0] != 2.0f || y[1] != 2.0f)
      ++wrong;
  });
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_TRUE(c.logs[1].ids.empty()) << "rank 1 is not a member and never took part";
  ASSERT_EQ(c.logs[0].ids.size(), 1u);
  EXPECT_EQ(c.logs[0].ids.begin()->second, c.logs[2].ids.begin()->second);
}

TEST(GpuRouting, OneRankWithoutGpuFailsTheBatchOnEveryRankNamingIt) {
  const int n = 3;
  GpuCluster* self = nullptr;
  GpuCluster c(n, [&self](int r) -> std::unique_ptr<GpuBackend> {
    if (r == 1) throw UnsupportedError("no NVIDIA driver on this node (test)");
    return fakes(self)(r);
  });
  self = &c;
  std::vector<std::string> errors(n);
  c.each([&](int r, Runtime& rt) {
    float x = 1, y = 0;
    auto h = rt.enqueue({on_gpu(tensor("g", &x, &y, {}))}, allreduce());
    EXPECT_EQ(wait(h), TANDEM_ERR_UNSUPPORTED);
    errors[r] = h->error();
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], errors[0]);
  EXPECT_NE(errors[0].find("rank 1: no NVIDIA driver on this node (test)"), std::string::npos)
      << errors[0];
  EXPECT_TRUE(c.logs[0].requests.empty()) << "nothing reached NCCL";
  expect_host_step_works(c);
}

TEST(GpuRouting, TensorOnAnotherGpuThanTheRanksIsAnErrorOnEveryRank) {
  GpuCluster* self = nullptr;
  GpuCluster c(2, [&self](int r) { return fakes(self, /*device=*/0)(r); });
  self = &c;
  std::vector<std::string> errors(2);
  c.each([&](int r, Runtime& rt) {
    float x = 1, y = 0;
    auto h = rt.enqueue({on_gpu(tensor("g", &x, &y, {}), r == 1 ? 1 : 0)}, allreduce());
    EXPECT_EQ(wait(h), TANDEM_ERR_MISMATCH);
    errors[r] = h->error();
  });
  // The device field differs, so negotiation names it first.
  EXPECT_NE(errors[0].find("disagree on device"), std::string::npos) << errors[0];
  // Agreed on GPU 1, but these ranks use GPU 0: the preflight says so.
  std::vector<std::string> again(2);
  c.each([&](int, Runtime& rt) {
    float x = 1, y = 0;
    auto h = rt.enqueue({on_gpu(tensor("g2", &x, &y, {}), 1)}, allreduce());
    EXPECT_EQ(wait(h), TANDEM_ERR_INVALID_ARGUMENT);
    again[0] = h->error();
  });
  EXPECT_NE(again[0].find("on GPU 1 but its GPU path uses GPU 0"), std::string::npos) << again[0];
}

TEST(GpuRouting, BrokenRuntimeAbortsTheDeviceCommunicators) {
  GpuCluster* self = nullptr;
  GpuCluster c(2, [&self](int r) { return fakes(self)(r); });
  self = &c;
  c.each([&](int, Runtime& rt) {  // creates the backends
    float x = 1, y = 0;
    EXPECT_EQ(wait(rt.enqueue({on_gpu(tensor("warm", &x, &y, {}))}, allreduce())), TANDEM_SUCCESS);
  });
  float x = 1, y = 0;
  auto h = c.ranks[1]->enqueue({on_gpu(tensor("orphan", &x, &y, {}))}, allreduce());
  c.ranks[0].reset();
  EXPECT_EQ(wait(h), TANDEM_ERR_ABORTED);
  std::lock_guard<std::mutex> lock(c.logs[1].mu);
  ASSERT_FALSE(c.logs[1].aborts.empty());
  EXPECT_NE(c.logs[1].aborts[0].find("rank(s) 0 shut down"), std::string::npos)
      << c.logs[1].aborts[0];
}

TEST(GpuRouting, JoinedRankMakesDeviceAllreduceUnsupportedEverywhere) {
  GpuCluster* self = nullptr;
  GpuCluster c(2, [&self](int r) { return fakes(self)(r); });
  self = &c;
  std::shared_ptr<HandleState> joined = c.ranks[1]->join();
  float x = 1, y = 0;
  auto h = c.ranks[0]->enqueue({on_gpu(tensor("late", &x, &y, {}))}, allreduce());
  EXPECT_EQ(wait(h), TANDEM_ERR_UNSUPPORTED);
  EXPECT_NE(h->error().find("join works with host tensors only"), std::string::npos) << h->error();
  auto j0 = c.ranks[0]->join();
  EXPECT_EQ(wait(j0), TANDEM_SUCCESS);
  EXPECT_EQ(wait(joined), TANDEM_SUCCESS);
}

}  // namespace
}  // namespace tandem::runtime::testing
