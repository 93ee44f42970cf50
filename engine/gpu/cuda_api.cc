#include "gpu/cuda_api.h"

#include "common/errors.h"

namespace tandem {
namespace gpu {

// Compile-time check that the spelled-out signatures exist in the header.
[[maybe_unused]] const auto kMallocSignature =
    static_cast<decltype(CudaApi::Malloc)>(&::cudaMalloc);
[[maybe_unused]] const auto kBatchSignature =
    static_cast<decltype(CudaApi::MemcpyBatchAsync)>(&::cudaMemcpyBatchAsync);

CudaApi CudaApi::load(const GpuSettings& settings) {
  const std::vector<std::string> candidates =
      settings.cuda_library.empty() ? std::vector<std::string>{"libcudart.so.13", "libcudart.so.12"}
                                    : std::vector<std::string>{settings.cuda_library};
  const auto lib = SharedLibrary::open_first(
      "the CUDA runtime (libcudart)", candidates,
      settings.cuda_library.empty()
          ? "install the CUDA 12 or 13 runtime, add its lib64 to LD_LIBRARY_PATH or set "
            "TANDEM_CUDA_LIBRARY to libcudart.so's path"
          : "fix or unset TANDEM_CUDA_LIBRARY");
  CudaApi api;
  api.path = lib.path();
  bind(lib, api.GetErrorName, "cudaGetErrorName");
  bind(lib, api.GetErrorString, "cudaGetErrorString");
  bind(lib, api.DriverGetVersion, "cudaDriverGetVersion");
  bind(lib, api.RuntimeGetVersion, "cudaRuntimeGetVersion");
  bind(lib, api.GetDeviceCount, "cudaGetDeviceCount");
  bind(lib, api.SetDevice, "cudaSetDevice");
  bind(lib, api.GetDevice, "cudaGetDevice");
  bind(lib, api.StreamCreateWithFlags, "cudaStreamCreateWithFlags");
  bind(lib, api.StreamDestroy, "cudaStreamDestroy");
  bind(lib, api.StreamWaitEvent, "cudaStreamWaitEvent");
  bind(lib, api.EventCreateWithFlags, "cudaEventCreateWithFlags");
  bind(lib, api.EventDestroy, "cudaEventDestroy");
  bind(lib, api.EventRecord, "cudaEventRecord");
  bind(lib, api.EventQuery, "cudaEventQuery");
  bind(lib, api.Malloc, "cudaMalloc");
  bind(lib, api.Free, "cudaFree");
  bind(lib, api.MemcpyAsync, "cudaMemcpyAsync");
  bind(lib, api.Memcpy, "cudaMemcpy");
  bind(lib, api.PointerGetAttributes, "cudaPointerGetAttributes");
  if (api.RuntimeGetVersion(&api.runtime_version) != cudaSuccess)
    throw UnsupportedError("the CUDA runtime at " + api.path + " did not report its version");
  if (api.runtime_version / 1000 != 12 && api.runtime_version / 1000 != 13)
    throw UnsupportedError("the CUDA runtime at " + api.path + " is version " +
                           std::to_string(api.runtime_version) +
                           "; tandem supports CUDA 12 and 13: set TANDEM_CUDA_LIBRARY to one");
  if (api.runtime_version >= 13000)
    bind_optional(lib, api.MemcpyBatchAsync, "cudaMemcpyBatchAsync");
  return api;
}

}  // namespace gpu
}  // namespace tandem
