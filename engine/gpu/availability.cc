#include "gpu/availability.h"

namespace tandem {
namespace gpu {

std::string cuda_version_string(int code) {
  return std::to_string(code / 1000) + "." + std::to_string(code % 1000 / 10);
}

std::string nccl_version_string(int code) {
  // Codes below 2.9 were X*1000+Y*100+Z, later ones X*10000+Y*100+Z.
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

namespace {
constexpr int kCudaErrorNoDevice = 100;  // cudaErrorNoDevice, without the header
}

// Order matters: each check assumes the previous ones passed, so the reason
// names the first thing to fix.
GpuStatus classify(const GpuFacts& f) {
  GpuStatus s;
  s.facts = f;
  if (!f.headers_at_build) {
    s.reason = "this libtandem was built without CUDA/NCCL headers (-Dcuda=disabled)";
  } else if (!f.cuda_error.empty()) {
    s.reason = f.cuda_error;
  } else if (f.driver_version == 0) {
    s.reason = "no NVIDIA driver on this node (libcuda.so.1 could not be loaded): no GPU here";
  } else if (f.driver_version < f.runtime_version) {
    s.reason = "NVIDIA driver too old: it supports CUDA " + cuda_version_string(f.driver_version) +
               " but the runtime at " + f.cuda_path + " is CUDA " +
               cuda_version_string(f.runtime_version) +
               ": update the driver or set TANDEM_CUDA_LIBRARY to an older libcudart";
  } else if (f.count_result == kCudaErrorNoDevice || (f.count_result == 0 && f.device_count == 0)) {
    s.reason = "no GPU visible to this process (check CUDA_VISIBLE_DEVICES and the step's --gpus)";
  } else if (f.count_result != 0) {
    s.reason =
        "cudaGetDeviceCount failed (" + std::to_string(f.count_result) + "): " + f.count_error;
  } else if (!f.nccl_error.empty()) {
    s.reason = f.nccl_error;
  } else {
    s.available = true;
    s.reason = std::to_string(f.device_count) + " GPU(s), CUDA runtime " +
               cuda_version_string(f.runtime_version) + " (" + f.cuda_path + "), driver CUDA " +
               cuda_version_string(f.driver_version) + ", NCCL " +
               nccl_version_string(f.nccl_version) + " (" + f.nccl_path + ")";
  }
  return s;
}

}  // namespace gpu
}  // namespace tandem
