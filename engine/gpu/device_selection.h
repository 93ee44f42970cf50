// Which CUDA device this rank uses. The plugin orders CUDA_VISIBLE_DEVICES
// so that device index == local rank is the GPU it assigned to the task
// (docs/design.md, binding); without the plugin, local ranks share the visible
// GPUs round robin. TANDEM_GPU_DEVICE overrides both. Pure: no CUDA call,
// the caller passes the visible device count and applies the choice once.
#pragma once

#include <optional>
#include <string>

namespace tandem {
namespace gpu {

struct DeviceChoice {
  int device = 0;
  std::string why;  // for the debug log and error messages
};

// Throws UnsupportedError when no GPU is visible, InvalidArgument when the
// override names a device that is not visible.
DeviceChoice select_device(std::optional<int> override_device, int local_rank, int local_size,
                           int visible_devices);

}  // namespace gpu
}  // namespace tandem
