// The part of NCCL the GPU path uses, loaded at run time like CudaApi.
// Tandem needs NCCL >= 2.14: non-blocking communicator init
// (ncclCommInitRankConfig with blocking = 0) and ncclCommFinalize.
#pragma once

#include <nccl.h>

#include <string>

#include "gpu/availability.h"
#include "gpu/gpu_settings.h"
#include "common/shared_library.h"

namespace tandem {
namespace gpu {

constexpr int kMinNcclVersion = 21400;

struct NcclApi {
  std::string path;
  int version = 0;  // ncclGetVersion's code, e.g. 22809

  decltype(&::ncclGetVersion) GetVersion = nullptr;
  decltype(&::ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&::ncclCommInitRankConfig) CommInitRankConfig = nullptr;
  decltype(&::ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&::ncclCommAbort) CommAbort = nullptr;
  decltype(&::ncclCommFinalize) CommFinalize = nullptr;
  decltype(&::ncclCommDestroy) CommDestroy = nullptr;
  decltype(&::ncclGetErrorString) GetErrorString = nullptr;
  decltype(&::ncclGetLastError) GetLastError = nullptr;
  decltype(&::ncclAllReduce) AllReduce = nullptr;
  decltype(&::ncclBroadcast) Broadcast = nullptr;
  decltype(&::ncclAllGather) AllGather = nullptr;
  decltype(&::ncclReduceScatter) ReduceScatter = nullptr;
  decltype(&::ncclReduce) Reduce = nullptr;
  decltype(&::ncclSend) Send = nullptr;
  decltype(&::ncclRecv) Recv = nullptr;
  decltype(&::ncclGroupStart) GroupStart = nullptr;
  decltype(&::ncclGroupEnd) GroupEnd = nullptr;
  decltype(&::ncclRedOpCreatePreMulSum) RedOpCreatePreMulSum = nullptr;
  decltype(&::ncclRedOpDestroy) RedOpDestroy = nullptr;

  // Loads TANDEM_NCCL_LIBRARY when set (only that), else libnccl.so.2.
  // Throws UnsupportedError with the reason (not found, too old).
  static NcclApi load(const GpuSettings& settings);
};

}  // namespace gpu
}  // namespace tandem
