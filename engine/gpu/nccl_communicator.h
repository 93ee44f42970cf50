// One NCCL communicator: the members of a process set on their GPUs.
//
// Everything runs in NCCL's non-blocking mode (config.blocking = 0): init
// and every call return at once, possibly with ncclInProgress, and we poll
// ncclCommGetAsyncError against a deadline. That is what lets a rank whose
// peers never show up, or die mid-collective, fail with an error instead of
// blocking inside NCCL forever (docs/design.md: nothing hangs forever).
//
// Threads: the communicator belongs to the thread that issues its
// operations (the runtime's background thread). abort() from another thread
// only records the reason; the owner sees it at its next poll and calls
// ncclCommAbort itself, because NCCL forbids using a communicator while
// another thread aborts it.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "gpu/communicator_cache.h"
#include "gpu/cuda_api.h"
#include "gpu/nccl_api.h"
#include "gpu/nccl_types.h"
#include "tandem/tandem.h"

namespace tandem {
namespace gpu {

using Deadline = std::chrono::steady_clock::time_point;

class NcclCommunicator : public DeviceComm {
 public:
  // Collective over spec.members, on the current CUDA device. Throws
  // TimeoutError when the members do not all connect before the deadline,
  // or the mapped NCCL error.
  static std::shared_ptr<NcclCommunicator> create(const NcclApi& nccl, const CommSpec& spec,
                                                  std::chrono::milliseconds timeout);
  ~NcclCommunicator() override;

  void abort(const std::string& reason) override;

  // Issue one collective on stream; return once NCCL has accepted it. Ranks
  // and roots are indices into the set's members.
  void allreduce(const void* send, void* recv, size_t count, tandem_dtype_t dtype, tandem_op_t op,
                 double prescale, double postscale, cudaStream_t stream, Deadline deadline);
  void broadcast(const void* send, void* recv, size_t count, tandem_dtype_t dtype, int root,
                 cudaStream_t stream, Deadline deadline);
  void allgather(const void* send, void* recv, size_t count, tandem_dtype_t dtype,
                 cudaStream_t stream, Deadline deadline);
  // recv_count elements per rank; send holds nranks * recv_count.
  void reducescatter(const void* send, void* recv, size_t recv_count, tandem_dtype_t dtype,
                     tandem_op_t op, cudaStream_t stream, Deadline deadline);
  // The runtime's uneven forms (first dimensions may differ per member);
  // counts in elements, member r's block at the sum of counts[0..r). Even
  // counts take NCCL's own collective; uneven ones a group: allgatherv as
  // one ncclBroadcast per member into its block, reducescatterv as one
  // ncclReduce per member rooted at it (no padding, no extra memory).
  void allgatherv(const void* send, void* recv, const std::vector<size_t>& counts,
                  tandem_dtype_t dtype, cudaStream_t stream, Deadline deadline);
  void reducescatterv(const void* send, void* recv, const std::vector<size_t>& counts,
                      tandem_dtype_t dtype, tandem_op_t op, double prescale, double postscale,
                      cudaStream_t stream, Deadline deadline);
  // Uneven alltoall as grouped send/recv, counts in elements, packed in
  // member order on both sides.
  void alltoallv(const void* send, const std::vector<size_t>& send_counts, void* recv,
                 const std::vector<size_t>& recv_counts, tandem_dtype_t dtype, cudaStream_t stream,
                 Deadline deadline);

  // Waits for `done` (recorded after the operations) while watching NCCL's
  // async error and abort requests. On the deadline: aborts and throws
  // TimeoutError; on an abort request: PeerLostError with its reason.
  void wait(const CudaApi& cuda, cudaEvent_t done, Deadline deadline, const std::string& what);
  // Non-blocking form of wait: true when done, false while running.
  bool test(const CudaApi& cuda, cudaEvent_t done, Deadline deadline, const std::string& what);

  int nranks() const { return nranks_; }
  int rank() const { return rank_; }
  const std::string& label() const { return label_; }

 private:
  NcclCommunicator(const NcclApi& nccl, ncclComm_t comm, int nranks, int rank, std::string label)
      : nccl_(nccl), comm_(comm), nranks_(nranks), rank_(rank), label_(std::move(label)) {}
  // Polls ncclCommGetAsyncError until it leaves ncclInProgress.
  void settle(Deadline deadline, const std::string& what);
  // One poll step shared by settle/test: throws on error, abort or deadline.
  void check_health(Deadline deadline, const std::string& what);
  // ncclRedOp for a reduction, creating the PreMulSum op when scales ask
  // for one; release() destroys it once the calls using it are enqueued.
  ncclRedOp_t make_op(const NcclReduction& red, tandem_dtype_t dtype);
  void release_op(const NcclReduction& red, ncclRedOp_t op);
  void abort_now();
  void fail(std::exception_ptr err);

  const NcclApi& nccl_;
  ncclComm_t comm_;
  int nranks_;
  int rank_;
  std::string label_;
  std::atomic<bool> abort_requested_{false};
  std::mutex reason_mu_;
  std::string abort_reason_;
  bool aborted_ = false;  // owner thread only
};

}  // namespace gpu
}  // namespace tandem
