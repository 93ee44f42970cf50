// How the runtime runs operations on device (GPU) tensors.
//
// Device tensors are negotiated like host ones: the device index is one of
// the fields every rank must agree on (a tensor on GPU 0 on one rank and on
// the host on another is a mismatch naming "device"), and fusion only packs
// tensors of the same device. Each decided batch whose tensors live on a
// device is handed to this interface instead of the host executor, on the
// runtime thread, at the same point of the set's order on every member.
// The NCCL implementation is gpu_data_path.h; tests inject fakes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/executor.h"
#include "runtime/handle.h"
#include "runtime/response.h"

namespace tandem::runtime {

class DevicePath {
 public:
  struct Result {
    tandem_result_t code = TANDEM_SUCCESS;
    std::string error;
    TensorOutput output;          // engine-allocated results (in device memory)
    std::vector<int64_t> splits;  // alltoall: rows received from each member
  };

  virtual ~DevicePath() = default;

  // Runs one batch (fused allreduces, or one other operation) with the
  // set's other members. entries[i] is this rank's entry for responses[i]
  // (nullptr on a joined rank). Returns one result per response. Failures
  // every member reports alike (GPU path unavailable on some member, an
  // unsupported reduction) come back as results and the job goes on; a
  // failure of the collective itself (lost peer, timeout) is thrown and
  // breaks the runtime as a host one does.
  virtual std::vector<Result> run(ExecContext& ctx, int set_id,
                                  const std::vector<const Response*>& responses,
                                  const std::vector<TensorEntry*>& entries) = 0;
  virtual void remove_process_set(int set_id) = 0;
  // The runtime broke (lost peer, timeout, shutdown): abort what waits on
  // devices so that nothing hangs on a peer that is gone. Any thread.
  virtual void abort(const std::string& reason) = 0;
};

}  // namespace tandem::runtime
