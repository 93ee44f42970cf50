#include "gpu/fusion_buffer.h"

#include "gpu/gpu_errors.h"

namespace tandem {
namespace gpu {

std::vector<size_t> fusion_offsets(const std::vector<size_t>& bytes, size_t* total) {
  std::vector<size_t> offsets;
  offsets.reserve(bytes.size());
  size_t at = 0;
  for (size_t b : bytes) {
    offsets.push_back(at);
    at += b;
  }
  if (total != nullptr) *total = at;
  return offsets;
}

void batched_copy(const CudaApi& cuda, const std::vector<CopyRegion>& regions,
                  cudaStream_t stream) {
  std::vector<void*> dsts;
  std::vector<const void*> srcs;
  std::vector<size_t> sizes;
  for (const auto& r : regions) {
    if (r.bytes == 0) continue;
    dsts.push_back(r.dst);
    srcs.push_back(r.src);
    sizes.push_back(r.bytes);
  }
  if (sizes.empty()) return;
  if (cuda.MemcpyBatchAsync != nullptr && sizes.size() > 1) {
    // One attribute for every copy: sources are read in stream order (the
    // framework's writes are ordered before us by the readiness event).
    cudaMemcpyAttributes attr = {};
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t attr_index = 0;
    check_cuda(cuda,
               cuda.MemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), sizes.size(), &attr,
                                     &attr_index, 1, stream),
               "cudaMemcpyBatchAsync (" + std::to_string(sizes.size()) + " fusion copies)");
    return;
  }
  for (size_t i = 0; i < sizes.size(); ++i)
    check_cuda(cuda, cuda.MemcpyAsync(dsts[i], srcs[i], sizes[i], cudaMemcpyDeviceToDevice, stream),
               "cudaMemcpyAsync (fusion copy)");
}

DeviceFusionBuffer::~DeviceFusionBuffer() {
  if (data_ != nullptr) cuda_.Free(data_);
}

void* DeviceFusionBuffer::reserve(size_t bytes) {
  if (bytes <= capacity_) return data_;
  if (data_ != nullptr) {
    cuda_.Free(data_);
    data_ = nullptr;
    capacity_ = 0;
  }
  check_cuda(cuda_, cuda_.Malloc(&data_, bytes),
             "cudaMalloc of the " + std::to_string(bytes) + "-byte fusion buffer");
  capacity_ = bytes;
  return data_;
}

}  // namespace gpu
}  // namespace tandem
