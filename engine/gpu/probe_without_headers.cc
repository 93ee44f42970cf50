// probe() for builds without the CUDA/NCCL headers: the GPU path is not
// compiled in, and says so.
#include "gpu/availability.h"

namespace tandem {
namespace gpu {

GpuStatus probe(const GpuSettings&) {
  GpuFacts f;
  f.headers_at_build = false;
  return classify(f);
}

}  // namespace gpu
}  // namespace tandem
