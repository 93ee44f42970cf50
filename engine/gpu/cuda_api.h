// The part of the CUDA runtime the GPU path uses, as a table of function
// pointers filled by dlopen/dlsym (see shared_library.h for why). Types come
// from cuda_runtime_api.h, which is needed at build time only.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "gpu/gpu_settings.h"
#include "common/shared_library.h"

namespace tandem {
namespace gpu {

struct CudaApi {
  std::string path;         // the file that was loaded
  int runtime_version = 0;  // cudaRuntimeGetVersion, e.g. 13000

  decltype(&::cudaGetErrorName) GetErrorName = nullptr;
  decltype(&::cudaGetErrorString) GetErrorString = nullptr;
  decltype(&::cudaDriverGetVersion) DriverGetVersion = nullptr;
  decltype(&::cudaRuntimeGetVersion) RuntimeGetVersion = nullptr;
  decltype(&::cudaGetDeviceCount) GetDeviceCount = nullptr;
  decltype(&::cudaSetDevice) SetDevice = nullptr;
  decltype(&::cudaGetDevice) GetDevice = nullptr;
  decltype(&::cudaStreamCreateWithFlags) StreamCreateWithFlags = nullptr;
  decltype(&::cudaStreamDestroy) StreamDestroy = nullptr;
  decltype(&::cudaStreamWaitEvent) StreamWaitEvent = nullptr;
  decltype(&::cudaEventCreateWithFlags) EventCreateWithFlags = nullptr;
  decltype(&::cudaEventDestroy) EventDestroy = nullptr;
  decltype(&::cudaEventRecord) EventRecord = nullptr;
  decltype(&::cudaEventQuery) EventQuery = nullptr;
  // cudaMalloc and cudaMemcpyBatchAsync are overloaded in C++: the exact
  // C signature is spelled out, and cuda_api.cc checks it against the header.
  cudaError_t (*Malloc)(void**, size_t) = nullptr;
  decltype(&::cudaFree) Free = nullptr;
  decltype(&::cudaMemcpyAsync) MemcpyAsync = nullptr;
  decltype(&::cudaMemcpy) Memcpy = nullptr;  // engine-allocated outputs to the caller
  decltype(&::cudaPointerGetAttributes) PointerGetAttributes = nullptr;
  // CUDA 13's signature; resolved only from a CUDA 13 runtime (12.8 had a
  // different one). nullptr means: copy one cudaMemcpyAsync at a time.
  cudaError_t (*MemcpyBatchAsync)(void* const*, const void* const*, const size_t*, size_t,
                                  cudaMemcpyAttributes*, size_t*, size_t, cudaStream_t) = nullptr;

  // Loads TANDEM_CUDA_LIBRARY when set (only that), else libcudart.so.13,
  // then libcudart.so.12. Throws UnsupportedError with the reason.
  static CudaApi load(const GpuSettings& settings);
};

}  // namespace gpu
}  // namespace tandem
