// CUDA and NCCL result codes as Tandem's typed errors. One mapping, used by
// every call site through check_cuda/check_nccl, so that the C API sees the
// same result code for the same failure everywhere:
//   no device / no or old driver        -> UnsupportedError
//   bad argument or usage               -> InvalidArgument
//   NCCL remote error (peer died/net)   -> PeerLostError
//   anything else the device reports    -> DeviceError
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <exception>
#include <string>

#include "common/errors.h"

namespace tandem {
namespace gpu {

struct CudaApi;
struct NcclApi;

// A failure reported by the GPU or its libraries that is none of the
// engine's more specific kinds (out of GPU memory, a kernel fault, an NCCL
// internal error). A SystemError (TANDEM_ERR_SYSTEM): the device failed.
class DeviceError : public SystemError {
 public:
  explicit DeviceError(const std::string& message) : SystemError(message) {}
};

// what: the operation and its subject, e.g. "ncclAllReduce on process set 0".
// detail: the library's own text (cudaGetErrorString, ncclGetLastError).
std::exception_ptr cuda_error(cudaError_t err, const char* name, const std::string& what,
                              const std::string& detail);
std::exception_ptr nccl_error(ncclResult_t res, const std::string& what, const std::string& detail);

// Throw the mapped error unless the call succeeded.
void check_cuda(const CudaApi& api, cudaError_t err, const std::string& what);
void check_nccl(const NcclApi& api, ncclComm_t comm, ncclResult_t res, const std::string& what);

}  // namespace gpu
}  // namespace tandem
