// tandem_gpu_available: the GPU path's availability for tandem-info and the
// bindings (cuda_built/nccl_built answer from it, truthfully, per node).
#include <exception>
#include <string>

#include "gpu/availability.h"
#include "tandem/tandem.h"

namespace {
thread_local std::string gpu_reason;
}

extern "C" TANDEM_API int tandem_gpu_available(const char** reason) {
  try {
    const auto status =
        tandem::gpu::probe(tandem::gpu::GpuSettings::from(tandem::gpu::process_environment()));
    gpu_reason = status.reason;
    if (reason != nullptr) *reason = gpu_reason.c_str();
    return status.available ? 1 : 0;
  } catch (const std::exception& e) {
    gpu_reason = e.what();
    if (reason != nullptr) *reason = gpu_reason.c_str();
    return -1;
  }
}
