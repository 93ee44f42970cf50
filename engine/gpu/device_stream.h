// RAII owners of CUDA streams and events, created on the current device.
#pragma once

#include <cuda_runtime_api.h>

#include "gpu/cuda_api.h"

namespace tandem {
namespace gpu {

class Stream {
 public:
  explicit Stream(const CudaApi& api);  // non-blocking w.r.t. the legacy stream
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  const CudaApi& api_;
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  explicit Event(const CudaApi& api);  // timing disabled: cheaper to record and wait on
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  const CudaApi& api_;
  cudaEvent_t event_ = nullptr;
};

}  // namespace gpu
}  // namespace tandem
