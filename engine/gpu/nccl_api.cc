#include "gpu/nccl_api.h"

#include "common/errors.h"

namespace tandem {
namespace gpu {

NcclApi NcclApi::load(const GpuSettings& settings) {
  const std::vector<std::string> candidates = settings.nccl_library.empty()
                                                  ? std::vector<std::string>{"libnccl.so.2"}
                                                  : std::vector<std::string>{settings.nccl_library};
  const auto lib = SharedLibrary::open_first(
      "NCCL (libnccl)", candidates,
      settings.nccl_library.empty()
          ? "install NCCL 2.14 or newer, add its directory to LD_LIBRARY_PATH or set "
            "TANDEM_NCCL_LIBRARY to libnccl.so.2's path"
          : "fix or unset TANDEM_NCCL_LIBRARY");
  NcclApi api;
  api.path = lib.path();
  bind(lib, api.GetVersion, "ncclGetVersion");
  if (api.GetVersion(&api.version) != ncclSuccess)
    throw UnsupportedError("NCCL at " + api.path + " did not report its version");
  if (api.version < kMinNcclVersion)
    throw UnsupportedError("NCCL at " + api.path + " is version " +
                           nccl_version_string(api.version) +
                           "; tandem needs 2.14 or newer (non-blocking communicator init): "
                           "install a newer NCCL or point TANDEM_NCCL_LIBRARY at one");
  bind(lib, api.GetUniqueId, "ncclGetUniqueId");
  bind(lib, api.CommInitRankConfig, "ncclCommInitRankConfig");
  bind(lib, api.CommGetAsyncError, "ncclCommGetAsyncError");
  bind(lib, api.CommAbort, "ncclCommAbort");
  bind(lib, api.CommFinalize, "ncclCommFinalize");
  bind(lib, api.CommDestroy, "ncclCommDestroy");
  bind(lib, api.GetErrorString, "ncclGetErrorString");
  bind(lib, api.GetLastError, "ncclGetLastError");
  bind(lib, api.AllReduce, "ncclAllReduce");
  bind(lib, api.Broadcast, "ncclBroadcast");
  bind(lib, api.AllGather, "ncclAllGather");
  bind(lib, api.ReduceScatter, "ncclReduceScatter");
  bind(lib, api.Reduce, "ncclReduce");
  bind(lib, api.Send, "ncclSend");
  bind(lib, api.Recv, "ncclRecv");
  bind(lib, api.GroupStart, "ncclGroupStart");
  bind(lib, api.GroupEnd, "ncclGroupEnd");
  bind(lib, api.RedOpCreatePreMulSum, "ncclRedOpCreatePreMulSum");
  bind(lib, api.RedOpDestroy, "ncclRedOpDestroy");
  return api;
}

}  // namespace gpu
}  // namespace tandem
