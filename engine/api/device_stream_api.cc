// tandem_set_device_stream: per thread, because a framework's "current
// stream" is per thread (torch.cuda.current_stream()), and a setter leaves
// tandem_tensor_t, which the bindings build with ctypes, as it is.
#include "api/device_stream.h"

#include "tandem/tandem.h"

namespace tandem::api {
thread_local void* device_stream = nullptr;

void* current_device_stream() { return device_stream; }

}  // namespace tandem::api

extern "C" TANDEM_API tandem_result_t tandem_set_device_stream(void* stream) {
  tandem::api::device_stream = stream;
  return TANDEM_SUCCESS;
}
