// Run-time loading of CUDA and NCCL, and the availability reason. Settings
// are given explicitly, so these tests mean the same with the libraries
// hidden from the environment (the gpu-hidden-libraries test runs them so).
#include <gtest/gtest.h>

#include <set>
#include <unistd.h>

#include "common/errors.h"
#include "gpu/availability.h"
#include "gpu/cuda_api.h"
#include "gpu/nccl_api.h"

namespace tandem {
namespace gpu {
namespace {

GpuSettings with(std::string cuda, std::string nccl) {
  GpuSettings s;
  s.cuda_library = std::move(cuda);
  s.nccl_library = std::move(nccl);
  return s;
}

constexpr const char* kCudart = "/usr/local/cuda/lib64/libcudart.so.13";
constexpr const char* kNccl = "/usr/local/cuda/lib64/libnccl.so.2";
// Present on every glibc system and certainly without CUDA's symbols.
constexpr const char* kNotCuda = "libm.so.6";

template <typename F>
std::string unsupported_message(F&& f) {
  try {
    f();
  } catch (const UnsupportedError& e) { return e.what(); }
  ADD_FAILURE() << "expected UnsupportedError";
  return "";
}

TEST(Loader, MissingCudaRuntimeSaysWhereItLookedAndWhatToDo) {
  const auto msg =
      unsupported_message([] { CudaApi::load(with("/nonexistent/libcudart.so.13", "")); });
  EXPECT_NE(msg.find("CUDA runtime (libcudart) not found"), std::string::npos) << msg;
  EXPECT_NE(msg.find("/nonexistent/libcudart.so.13"), std::string::npos) << msg;
  EXPECT_NE(msg.find("TANDEM_CUDA_LIBRARY"), std::string::npos) << msg;
}

TEST(Loader, MissingNcclSaysSo) {
  const auto msg =
      unsupported_message([] { NcclApi::load(with("", "/nonexistent/libnccl.so.2")); });
  EXPECT_NE(msg.find("NCCL (libnccl) not found"), std::string::npos) << msg;
  EXPECT_NE(msg.find("TANDEM_NCCL_LIBRARY"), std::string::npos) << msg;
}

TEST(Loader, LibraryWithoutTheSymbolsIsRejectedByName) {
  auto msg = unsupported_message([] { CudaApi::load(with(kNotCuda, "")); });
  EXPECT_NE(msg.find("has no symbol cudaGetErrorName"), std::string::npos) << msg;
  msg = unsupported_message([] { NcclApi::load(with("", kNotCuda)); });
  EXPECT_NE(msg.find("has no symbol ncclGetVersion"), std::string::npos) << msg;
}

TEST(Loader, ProbeWithHiddenLibrariesGivesTheFirstReason) {
  const auto s = probe(with("/nonexistent/libcudart.so", "/nonexistent/libnccl.so.2"));
  EXPECT_FALSE(s.available);
  EXPECT_NE(s.reason.find("CUDA runtime (libcudart) not found"), std::string::npos) << s.reason;
  EXPECT_NE(s.facts.nccl_error.find("not found"), std::string::npos);
}

class InstalledLibraries : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kCudart, R_OK) != 0 || access(kNccl, R_OK) != 0)
      GTEST_SKIP() << "CUDA 13 and NCCL are not installed under /usr/local/cuda on this machine";
  }
};

TEST_F(InstalledLibraries, LoadIntoFullTables) {
  const auto cuda = CudaApi::load(with(kCudart, ""));
  EXPECT_EQ(cuda.runtime_version / 1000, 13);
  EXPECT_NE(cuda.path.find("libcudart.so.13"), std::string::npos);
  EXPECT_NE(cuda.MemcpyBatchAsync, nullptr) << "CUDA 13 has cudaMemcpyBatchAsync";
  EXPECT_STREQ(cuda.GetErrorName(cudaErrorNoDevice), "cudaErrorNoDevice");
  const auto nccl = NcclApi::load(with("", kNccl));
  EXPECT_GE(nccl.version, kMinNcclVersion);
  EXPECT_NE(nccl.CommInitRankConfig, nullptr);
}

TEST_F(InstalledLibraries, ProbeAgreesWithWhatTheRuntimeReports) {
  const auto s = probe(with(kCudart, kNccl));
  EXPECT_TRUE(s.facts.cuda_error.empty()) << s.facts.cuda_error;
  EXPECT_TRUE(s.facts.nccl_error.empty()) << s.facts.nccl_error;
  const bool has_gpu =
      s.facts.driver_version >= s.facts.runtime_version && s.facts.device_count > 0;
  EXPECT_EQ(s.available, has_gpu) << s.reason;
  if (s.facts.driver_version == 0) {  // this CI machine: no driver, no GPU
    EXPECT_NE(s.reason.find("no NVIDIA driver"), std::string::npos) << s.reason;
  }
}

// Found out here: ncclGetUniqueId needs no GPU and no driver (it sets up
// NCCL's bootstrap listener only), so the id exchange runs on CPU nodes too.
TEST_F(InstalledLibraries, NcclUniqueIdNeedsNoGpuAndIsFreshEachTime) {
  const auto nccl = NcclApi::load(with("", kNccl));
  std::set<std::string> seen;
  for (int i = 0; i < 3; ++i) {
    ncclUniqueId id;
    ASSERT_EQ(nccl.GetUniqueId(&id), ncclSuccess);
    EXPECT_TRUE(seen.insert(std::string(id.internal, sizeof id.internal)).second);
  }
}

TEST(Classify, EveryReasonInOrder) {
  GpuFacts f;
  f.cuda_path = "/x/libcudart.so.13";
  f.runtime_version = 13000;
  f.driver_version = 13000;
  f.device_count = 2;
  f.nccl_path = "/x/libnccl.so.2";
  f.nccl_version = 22809;
  auto ok = classify(f);
  EXPECT_TRUE(ok.available);
  EXPECT_NE(ok.reason.find("2 GPU(s)"), std::string::npos) << ok.reason;
  EXPECT_NE(ok.reason.find("NCCL 2.28.9"), std::string::npos) << ok.reason;

  auto nogpu = f;
  nogpu.device_count = 0;
  EXPECT_FALSE(classify(nogpu).available);
  EXPECT_NE(classify(nogpu).reason.find("no GPU visible"), std::string::npos);
  nogpu.count_result = 100;  // cudaErrorNoDevice
  EXPECT_NE(classify(nogpu).reason.find("no GPU visible"), std::string::npos);

  auto old = f;
  old.driver_version = 12040;
  EXPECT_NE(classify(old).reason.find("driver too old: it supports CUDA 12.4"), std::string::npos)
      << classify(old).reason;
  auto nodriver = f;
  nodriver.driver_version = 0;
  EXPECT_NE(classify(nodriver).reason.find("no NVIDIA driver"), std::string::npos);
  auto nonccl = f;
  nonccl.nccl_error = "NCCL (libnccl) not found (...)";
  EXPECT_EQ(classify(nonccl).reason, nonccl.nccl_error);
  auto nocuda = nodriver;
  nocuda.cuda_error = "the CUDA runtime (libcudart) not found";
  EXPECT_EQ(classify(nocuda).reason, nocuda.cuda_error) << "the first missing piece is named";
  auto noheaders = f;
  noheaders.headers_at_build = false;
  EXPECT_NE(classify(noheaders).reason.find("-Dcuda=disabled"), std::string::npos);
}

TEST(Classify, VersionStrings) {
  EXPECT_EQ(cuda_version_string(12040), "12.4");
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(nccl_version_string(22809), "2.28.9");
  EXPECT_EQ(nccl_version_string(2708), "2.7.8");
}

}  // namespace
}  // namespace gpu
}  // namespace tandem
