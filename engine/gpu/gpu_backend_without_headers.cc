// GpuBackend::create for builds without the CUDA/NCCL headers: the GPU path
// is not compiled in, so a GPU tensor fails with probe()'s reason (which says
// so) instead of a link error or a silent CPU fallback.
#include "common/errors.h"
#include "gpu/availability.h"
#include "gpu/gpu_backend.h"

namespace tandem {
namespace gpu {

std::unique_ptr<GpuBackend> GpuBackend::create(const Identity&, const GpuSettings& settings,
                                               std::chrono::milliseconds) {
  throw UnsupportedError(probe(settings).reason);
}

}  // namespace gpu
}  // namespace tandem
