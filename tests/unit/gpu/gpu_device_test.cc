// The NCCL path on real GPUs: ranks as threads, one GPU each, over a
// MemoryWorld. Skipped (exit 77, which meson reports as SKIP) when this
// machine has no usable GPU; see docs/gpu.md for where it has been run.
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "bootstrap/memory_bootstrap.h"
#include "gpu/availability.h"
#include "gpu/cuda_api.h"
#include "gpu/gpu_backend.h"

namespace tandem {
namespace gpu {
namespace {

GpuStatus status() { return probe(GpuSettings::from(process_environment())); }

// Synchronous copies for checking results; the code under test never waits
// on the host like this.
class DeviceVector {
 public:
  DeviceVector(const CudaApi& cuda, const std::vector<float>& host) : cuda_(cuda), n_(host.size()) {
    EXPECT_EQ(cuda_.Malloc(&ptr_, std::max<size_t>(n_, 1) * 4), cudaSuccess);
    copy(ptr_, host.data(), n_ * 4);
  }
  ~DeviceVector() { cuda_.Free(ptr_); }
  float* get() { return static_cast<float*>(ptr_); }
  std::vector<float> read() const {
    std::vector<float> out(n_);
    copy(out.data(), ptr_, n_ * 4);
    return out;
  }

 private:
  void copy(void* dst, const void* src, size_t bytes) const {
    if (bytes == 0) return;
    ASSERT_EQ(cuda_.MemcpyAsync(dst, src, bytes, cudaMemcpyDefault, nullptr), cudaSuccess);
    cudaEvent_t ev;
    ASSERT_EQ(cuda_.EventCreateWithFlags(&ev, cudaEventDisableTiming), cudaSuccess);
    ASSERT_EQ(cuda_.EventRecord(ev, nullptr), cudaSuccess);
    while (cuda_.EventQuery(ev) == cudaErrorNotReady) std::this_thread::yield();
    cuda_.EventDestroy(ev);
  }
  const CudaApi& cuda_;
  void* ptr_ = nullptr;
  size_t n_;
};

void on_ranks(int n, const std::function<void(int, GpuBackend&, const CudaApi&)>& body) {
  auto world = std::make_shared<MemoryWorld>(n);
  const auto settings = GpuSettings::from(process_environment());
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      MemoryBootstrap boot(world, r);
      auto backend = GpuBackend::create(boot.identity(), settings, std::chrono::seconds(60));
      const CudaApi cuda = CudaApi::load(settings);
      std::vector<int> all;
      for (int i = 0; i < n; ++i) all.push_back(i);
      backend->add_process_set(boot, 0, all);
      body(r, *backend, cuda);
    });
  for (auto& t : threads) t.join();
}

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto s = status();
    if (!s.available) GTEST_SKIP() << "no usable GPU: " << s.reason;
    n_ = std::min(s.facts.device_count, 4);
  }
  int n_ = 1;
};

TEST_F(Gpu, FusedAllreduceWithScale) {
  on_ranks(n_, [&](int r, GpuBackend& be, const CudaApi& cuda) {
    std::vector<std::unique_ptr<DeviceVector>> t;
    const std::vector<size_t> sizes = {5, 0, 1, 7};
    GpuRequest req;
    req.name = "fused";
    req.prescale = 2.0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      t.push_back(std::make_unique<DeviceVector>(cuda, std::vector<float>(sizes[i], r + 1.0f + i)));
      req.tensors.push_back({t.back()->get(), t.back()->get(), sizes[i]});
    }
    auto w = be.enqueue(req);
    be.wait(*w);
    for (size_t i = 0; i < sizes.size(); ++i) {
      const float want = 2.0f * (n_ * (n_ + 1) / 2.0f + n_ * static_cast<float>(i));
      for (float v : t[i]->read()) EXPECT_EQ(v, want) << "rank " << r << " tensor " << i;
    }
  });
}

TEST_F(Gpu, BroadcastAllgatherReducescatterAlltoall) {
  on_ranks(n_, [&](int r, GpuBackend& be, const CudaApi& cuda) {
    DeviceVector b(cuda, std::vector<float>(4, r == 0 ? 42.0f : -1.0f));
    GpuRequest req;
    req.kind = GpuOpKind::kBroadcast;
    req.name = "b";
    req.tensors = {{b.get(), b.get(), 4}};
    auto w = be.enqueue(req);
    be.wait(*w);
    for (float v : b.read()) EXPECT_EQ(v, 42.0f);

    DeviceVector mine(cuda, std::vector<float>(3, static_cast<float>(r)));
    DeviceVector all(cuda, std::vector<float>(3 * n_, -1.0f));
    req.kind = GpuOpKind::kAllgather;
    req.tensors = {{mine.get(), all.get(), 3}};
    w = be.enqueue(req);
    be.wait(*w);
    auto got = all.read();
    for (int i = 0; i < 3 * n_; ++i) EXPECT_EQ(got[i], static_cast<float>(i / 3));

    DeviceVector rs_in(cuda, std::vector<float>(2 * n_, r + 1.0f));
    DeviceVector rs_out(cuda, std::vector<float>(2, 0.0f));
    req.kind = GpuOpKind::kReducescatter;
    req.tensors = {{rs_in.get(), rs_out.get(), 2}};
    w = be.enqueue(req);
    be.wait(*w);
    for (float v : rs_out.read()) EXPECT_EQ(v, n_ * (n_ + 1) / 2.0f);

    std::vector<float> send;
    req.send_counts.clear();
    req.recv_counts.clear();
    for (int p = 0; p < n_; ++p) {
      req.send_counts.push_back(p + 1);
      req.recv_counts.push_back(r + 1);
      for (int k = 0; k <= p; ++k) send.push_back(r * 10.0f + p);
    }
    DeviceVector a_in(cuda, send);
    DeviceVector a_out(cuda, std::vector<float>((r + 1) * n_, -1.0f));
    req.kind = GpuOpKind::kAlltoall;
    req.tensors = {{a_in.get(), a_out.get(), send.size()}};
    w = be.enqueue(req);
    be.wait(*w);
    got = a_out.read();
    for (int p = 0; p < n_; ++p)
      for (int k = 0; k <= r; ++k) EXPECT_EQ(got[p * (r + 1) + k], p * 10.0f + r);
  });
}

}  // namespace
}  // namespace gpu
}  // namespace tandem

// Every test skipped means "not run here": exit 77 so meson says SKIP, not OK.
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  const auto* unit = ::testing::UnitTest::GetInstance();
  if (rc == 0 && unit->test_to_run_count() > 0 &&
      unit->skipped_test_count() == unit->test_to_run_count())
    return 77;
  return rc;
}
