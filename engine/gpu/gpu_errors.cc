#include "gpu/gpu_errors.h"

#include "gpu/cuda_api.h"
#include "gpu/nccl_api.h"

namespace tandem {
namespace gpu {

std::exception_ptr cuda_error(cudaError_t err, const char* name, const std::string& what,
                              const std::string& detail) {
  const std::string msg = what + " failed: " + (name ? name : "cudaError") + " (" +
                          std::to_string(static_cast<int>(err)) + "): " + detail;
  switch (err) {
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCallRequiresNewerDriver:
      return std::make_exception_ptr(UnsupportedError(
          msg + "; this node cannot run the GPU path (see tandem-info), use CPU tensors here"));
    case cudaErrorInvalidDevice:
      return std::make_exception_ptr(
          InvalidArgument(msg + "; check TANDEM_GPU_DEVICE and CUDA_VISIBLE_DEVICES"));
    case cudaErrorInvalidValue: return std::make_exception_ptr(InvalidArgument(msg));
    case cudaErrorMemoryAllocation:
      return std::make_exception_ptr(
          DeviceError(msg + "; lower HOROVOD_FUSION_THRESHOLD or the model's memory use"));
    default: return std::make_exception_ptr(DeviceError(msg));
  }
}

std::exception_ptr nccl_error(ncclResult_t res, const std::string& what,
                              const std::string& detail) {
  std::string msg = what + " failed: NCCL error " + std::to_string(static_cast<int>(res));
  if (!detail.empty()) msg += ": " + detail;
  switch (res) {
    case ncclInvalidArgument:
    case ncclInvalidUsage: return std::make_exception_ptr(InvalidArgument(msg));
    case ncclRemoteError:
      return std::make_exception_ptr(
          PeerLostError(msg + "; a peer process exited or its network failed"));
    case ncclSystemError:
      return std::make_exception_ptr(
          DeviceError(msg + "; a system call inside NCCL failed (NCCL_DEBUG=WARN says which)"));
    case ncclUnhandledCudaError:
      return std::make_exception_ptr(DeviceError(msg + "; a CUDA call inside NCCL failed"));
    default: return std::make_exception_ptr(DeviceError(msg));
  }
}

void check_cuda(const CudaApi& api, cudaError_t err, const std::string& what) {
  if (err == cudaSuccess) return;
  std::rethrow_exception(cuda_error(err, api.GetErrorName(err), what, api.GetErrorString(err)));
}

void check_nccl(const NcclApi& api, ncclComm_t comm, ncclResult_t res, const std::string& what) {
  if (res == ncclSuccess || res == ncclInProgress) return;
  // ncclGetLastError holds the message of the thread's last failure, more
  // precise than the generic ncclGetErrorString text.
  const char* last = api.GetLastError(comm);
  std::string detail = api.GetErrorString(res);
  if (last != nullptr && last[0] != '\0') detail += " (" + std::string(last) + ")";
  std::rethrow_exception(nccl_error(res, what, detail));
}

}  // namespace gpu
}  // namespace tandem
