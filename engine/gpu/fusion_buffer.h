// The device fusion buffer: many small GPU tensors packed into one
// allocation so that NCCL runs one collective instead of one per tensor,
// with the packing done as batched device-to-device copies on tandem's
// stream (cudaMemcpyBatchAsync on CUDA 13: one call for the whole batch;
// one cudaMemcpyAsync per tensor on CUDA 12).
#pragma once

#include <cstddef>
#include <vector>

#include <cuda_runtime_api.h>

#include "gpu/cuda_api.h"

namespace tandem {
namespace gpu {

struct CopyRegion {
  void* dst;
  const void* src;
  size_t bytes;
};

// Byte offset of each piece, packed back to back in order (all pieces share
// one data type, so each offset stays a multiple of the element size).
std::vector<size_t> fusion_offsets(const std::vector<size_t>& bytes, size_t* total);

// Enqueues every copy on stream; empty regions are skipped.
void batched_copy(const CudaApi& cuda, const std::vector<CopyRegion>& regions, cudaStream_t stream);

class DeviceFusionBuffer {
 public:
  explicit DeviceFusionBuffer(const CudaApi& cuda) : cuda_(cuda) {}
  ~DeviceFusionBuffer();
  DeviceFusionBuffer(const DeviceFusionBuffer&) = delete;
  DeviceFusionBuffer& operator=(const DeviceFusionBuffer&) = delete;

  // At least bytes of device memory on the current device. Growing frees
  // the old buffer with cudaFree, which waits for the device: a one-time
  // cost while the sizes settle, never per step.
  void* reserve(size_t bytes);
  size_t capacity() const { return capacity_; }

 private:
  const CudaApi& cuda_;
  void* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace gpu
}  // namespace tandem
