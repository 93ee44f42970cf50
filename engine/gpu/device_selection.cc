#include "gpu/device_selection.h"

#include "common/errors.h"

namespace tandem {
namespace gpu {

DeviceChoice select_device(std::optional<int> override_device, int local_rank, int local_size,
                           int visible_devices) {
  if (visible_devices <= 0)
    throw UnsupportedError("GPU tensor on local rank " + std::to_string(local_rank) +
                           ", but no GPU is visible to this process (check CUDA_VISIBLE_DEVICES "
                           "and the step's --gpus)");
  DeviceChoice c;
  if (override_device) {
    if (*override_device >= visible_devices)
      throw InvalidArgument("TANDEM_GPU_DEVICE=" + std::to_string(*override_device) + " but only " +
                            std::to_string(visible_devices) + " GPU(s) are visible (indices 0.." +
                            std::to_string(visible_devices - 1) +
                            "): pick one of those or unset it");
    c.device = *override_device;
    c.why = "TANDEM_GPU_DEVICE=" + std::to_string(c.device);
    return c;
  }
  if (local_rank < 0)
    throw InvalidArgument("select_device: local rank " + std::to_string(local_rank) +
                          " is negative");
  c.device = local_rank % visible_devices;
  c.why = "local rank " + std::to_string(local_rank) + " of " + std::to_string(local_size) +
          " on " + std::to_string(visible_devices) + " visible GPU(s)";
  // More ranks than GPUs: ranks share devices. NCCL rejects two ranks of one
  // communicator on one GPU, so say it here, where the cause is visible.
  if (local_size > visible_devices) c.why += " (shared: NCCL needs one GPU per rank)";
  return c;
}

}  // namespace gpu
}  // namespace tandem
