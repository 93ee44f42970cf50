#include "gpu/device_stream.h"

#include "gpu/gpu_errors.h"

namespace tandem {
namespace gpu {

Stream::Stream(const CudaApi& api) : api_(api) {
  check_cuda(api_, api_.StreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
             "creating tandem's CUDA stream");
}

Stream::~Stream() {
  if (stream_ != nullptr) api_.StreamDestroy(stream_);
}

Event::Event(const CudaApi& api) : api_(api) {
  check_cuda(api_, api_.EventCreateWithFlags(&event_, cudaEventDisableTiming),
             "creating a CUDA event");
}

Event::~Event() {
  if (event_ != nullptr) api_.EventDestroy(event_);
}

}  // namespace gpu
}  // namespace tandem
