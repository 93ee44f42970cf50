// Device selection and the GPU settings, from a fake environment.
#include <gtest/gtest.h>

#include <map>

#include "common/errors.h"
#include "gpu/device_selection.h"
#include "gpu/gpu_settings.h"

namespace tandem {
namespace gpu {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

TEST(GpuSettings, DefaultsWhenUnset) {
  const auto s = GpuSettings::from(env_of({}));
  EXPECT_EQ(s.cuda_library, "");
  EXPECT_EQ(s.nccl_library, "");
  EXPECT_FALSE(s.device.has_value());
}

TEST(GpuSettings, ParsesOverrides) {
  const auto s = GpuSettings::from(env_of({{"TANDEM_CUDA_LIBRARY", "/opt/cuda/libcudart.so.12"},
                                           {"TANDEM_NCCL_LIBRARY", "/opt/nccl/libnccl.so.2"},
                                           {"TANDEM_GPU_DEVICE", "3"}}));
  EXPECT_EQ(s.cuda_library, "/opt/cuda/libcudart.so.12");
  EXPECT_EQ(s.nccl_library, "/opt/nccl/libnccl.so.2");
  EXPECT_EQ(s.device, 3);
}

TEST(GpuSettings, RejectsBadValuesNamingTheVariable) {
  for (const char* bad : {"", "-1", "x", "1x", " 1", "99999999999"}) {
    try {
      GpuSettings::from(env_of({{"TANDEM_GPU_DEVICE", bad}}));
      FAIL() << "accepted TANDEM_GPU_DEVICE='" << bad << "'";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("TANDEM_GPU_DEVICE='" + std::string(bad) + "'"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(GpuSettings::from(env_of({{"TANDEM_NCCL_LIBRARY", ""}})), InvalidArgument);
  EXPECT_THROW(GpuSettings::from(env_of({{"TANDEM_CUDA_LIBRARY", ""}})), InvalidArgument);
}

TEST(DeviceSelection, LocalRankUnderThePluginsOrdering) {
  // The plugin orders CUDA_VISIBLE_DEVICES so index == local rank.
  for (int lr = 0; lr < 4; ++lr) EXPECT_EQ(select_device(std::nullopt, lr, 4, 4).device, lr);
}

TEST(DeviceSelection, RoundRobinWithoutThePlugin) {
  EXPECT_EQ(select_device(std::nullopt, 5, 8, 4).device, 1);
  EXPECT_EQ(select_device(std::nullopt, 3, 8, 2).device, 1);
  const auto c = select_device(std::nullopt, 2, 8, 4);
  EXPECT_EQ(c.device, 2);
  EXPECT_NE(c.why.find("shared"), std::string::npos) << c.why;
}

TEST(DeviceSelection, OverrideWinsAndIsChecked) {
  const auto c = select_device(2, 0, 4, 4);
  EXPECT_EQ(c.device, 2);
  EXPECT_NE(c.why.find("TANDEM_GPU_DEVICE=2"), std::string::npos);
  try {
    select_device(4, 0, 4, 4);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("only 4 GPU(s) are visible"), std::string::npos);
  }
}

TEST(DeviceSelection, NoVisibleGpuIsUnsupported) {
  EXPECT_THROW(select_device(std::nullopt, 0, 1, 0), UnsupportedError);
  EXPECT_THROW(select_device(0, 0, 1, 0), UnsupportedError);
}

}  // namespace
}  // namespace gpu
}  // namespace tandem
