// The CUDA stream that device tensors enqueued by the calling thread are
// ordered on (tandem_set_device_stream), read by the enqueue calls.
#pragma once

namespace tandem::api {

void* current_device_stream();

}  // namespace tandem::api
