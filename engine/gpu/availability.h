// Whether this process can use the GPU path, and if not, why: the answer
// tandem-info prints and the message a GPU tensor fails with on a node
// without one. Needs no CUDA headers, so a build without them answers too.
#pragma once

#include <string>

#include "gpu/gpu_settings.h"

namespace tandem {
namespace gpu {

// What the probe saw. Kept apart from the decision (classify) so that every
// branch is testable on a machine that has no GPU.
struct GpuFacts {
  bool headers_at_build = true;
  std::string cuda_error;  // non-empty: the runtime could not be loaded
  std::string cuda_path;
  int runtime_version = 0;  // e.g. 13000
  int driver_version = 0;   // 0: no driver (libcuda.so.1) in this process
  int count_result = 0;     // cudaGetDeviceCount's cudaError_t
  std::string count_error;  // its text when not 0
  int device_count = 0;
  std::string nccl_error;  // non-empty: NCCL could not be loaded
  std::string nccl_path;
  int nccl_version = 0;
};

struct GpuStatus {
  bool available = false;
  std::string reason;  // why not, or a one-line summary when available
  GpuFacts facts;
};

GpuStatus classify(const GpuFacts& facts);

// Loads the libraries (as the GPU path would) and asks for the devices.
// Never throws for "no GPU"; only a bad setting (TANDEM_GPU_DEVICE=x) does.
GpuStatus probe(const GpuSettings& settings);

// "13.0" from 13000.
std::string cuda_version_string(int code);
// "2.28.9" from 22809.
std::string nccl_version_string(int code);

}  // namespace gpu
}  // namespace tandem
