// probe() for builds with the CUDA/NCCL headers (probe_without_headers.cc
// otherwise): loads both libraries the way the GPU path does.
#include <exception>

#include "gpu/availability.h"
#include "gpu/cuda_api.h"
#include "gpu/nccl_api.h"

namespace tandem {
namespace gpu {

GpuStatus probe(const GpuSettings& settings) {
  GpuFacts f;
  try {
    const CudaApi cuda = CudaApi::load(settings);
    f.cuda_path = cuda.path;
    f.runtime_version = cuda.runtime_version;
    if (cuda.DriverGetVersion(&f.driver_version) != cudaSuccess) f.driver_version = 0;
    const cudaError_t err = cuda.GetDeviceCount(&f.device_count);
    f.count_result = static_cast<int>(err);
    if (err != cudaSuccess) {
      f.device_count = 0;
      f.count_error = cuda.GetErrorString(err);
    }
  } catch (const std::exception& e) { f.cuda_error = e.what(); }
  try {
    const NcclApi nccl = NcclApi::load(settings);
    f.nccl_path = nccl.path;
    f.nccl_version = nccl.version;
  } catch (const std::exception& e) { f.nccl_error = e.what(); }
  return classify(f);
}

}  // namespace gpu
}  // namespace tandem
