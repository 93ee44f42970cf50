#include "gpu/nccl_communicator.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <thread>

#include "common/errors.h"
#include "gpu/gpu_errors.h"
#include "gpu/nccl_types.h"

namespace tandem {
namespace gpu {
namespace {

// Polling backs off from a few microseconds (a collective that is about to
// finish) to a millisecond (a peer that is late), so an idle wait costs
// little CPU and a fast one adds little latency.
class Backoff {
 public:
  void pause() {
    std::this_thread::sleep_for(std::chrono::microseconds(us_));
    if (us_ < 1000) us_ *= 2;
  }

 private:
  int us_ = 4;
};

}  // namespace

std::shared_ptr<NcclCommunicator> NcclCommunicator::create(const NcclApi& nccl,
                                                           const CommSpec& spec,
                                                           std::chrono::milliseconds timeout) {
  const std::string label = "process set " + std::to_string(spec.set_id);
  const int nranks = static_cast<int>(spec.members.size());
  ncclUniqueId id;
  static_assert(sizeof(id.internal) == kUniqueIdBytes, "ncclUniqueId size changed");
  std::memcpy(id.internal, spec.id.data(), kUniqueIdBytes);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const std::string what = "ncclCommInitRankConfig (" + label + ", rank " +
                           std::to_string(spec.index) + " of " + std::to_string(nranks) + ")";
  check_nccl(nccl, nullptr, nccl.CommInitRankConfig(&comm, nranks, id, spec.index, &config), what);
  std::shared_ptr<NcclCommunicator> self(
      new NcclCommunicator(nccl, comm, nranks, spec.index, label));
  try {
    self->settle(std::chrono::steady_clock::now() + timeout, what);
  } catch (const TimeoutError&) {
    std::string ranks;
    for (int r : spec.members) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    throw TimeoutError(what + ": not every member (world ranks " + ranks + ") connected within " +
                       std::to_string(timeout.count()) +
                       " ms; the communicator was aborted. Check that every member is alive and "
                       "that NCCL_SOCKET_IFNAME/NCCL_IB_HCA let the nodes reach each other");
  }
  return self;
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ == nullptr) return;
  if (aborted_ || abort_requested_) {
    if (!aborted_) nccl_.CommAbort(comm_);
    return;
  }
  // A healthy communicator is finalized (flushes pending work) then
  // destroyed; finalize is non-blocking here, so bound it like the rest and
  // abort when a peer no longer answers.
  ncclResult_t state = nccl_.CommFinalize(comm_);
  Backoff backoff;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (state == ncclInProgress && std::chrono::steady_clock::now() < deadline) {
    backoff.pause();
    if (nccl_.CommGetAsyncError(comm_, &state) != ncclSuccess) state = ncclInternalError;
  }
  if (state != ncclSuccess) {
    nccl_.CommAbort(comm_);
    return;
  }
  nccl_.CommDestroy(comm_);
}

void NcclCommunicator::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(reason_mu_);
    if (abort_reason_.empty()) abort_reason_ = reason;
  }
  abort_requested_ = true;
}

void NcclCommunicator::abort_now() {
  if (!aborted_) {
    aborted_ = true;
    nccl_.CommAbort(comm_);
    comm_ = nullptr;
  }
}

void NcclCommunicator::fail(std::exception_ptr err) {
  abort_now();
  std::rethrow_exception(err);
}

void NcclCommunicator::check_health(Deadline deadline, const std::string& what) {
  if (aborted_)
    throw AbortedError(what + ": the NCCL communicator of " + label_ + " was aborted earlier");
  if (abort_requested_) {
    std::string reason;
    {
      std::lock_guard<std::mutex> lock(reason_mu_);
      reason = abort_reason_;
    }
    fail(std::make_exception_ptr(PeerLostError(what + " on " + label_ + ": " + reason)));
  }
  ncclResult_t state = ncclSuccess;
  const ncclResult_t res = nccl_.CommGetAsyncError(comm_, &state);
  if (res != ncclSuccess) state = res;
  if (state != ncclSuccess && state != ncclInProgress) {
    const char* last = nccl_.GetLastError(comm_);
    std::string detail = nccl_.GetErrorString(state);
    if (last != nullptr && last[0] != '\0') detail += " (" + std::string(last) + ")";
    fail(nccl_error(state, what + " on " + label_, detail));
  }
  if (std::chrono::steady_clock::now() >= deadline)
    fail(std::make_exception_ptr(
        TimeoutError(what + " on " + label_ +
                     " did not complete before the deadline (TANDEM_TIMEOUT); the "
                     "communicator was aborted: a member is lost, stalled or never called it")));
}

void NcclCommunicator::settle(Deadline deadline, const std::string& what) {
  Backoff backoff;
  for (;;) {
    ncclResult_t state = ncclInProgress;
    check_health(deadline, what);
    if (nccl_.CommGetAsyncError(comm_, &state) == ncclSuccess && state == ncclSuccess) return;
    backoff.pause();
  }
}

bool NcclCommunicator::test(const CudaApi& cuda, cudaEvent_t done, Deadline deadline,
                            const std::string& what) {
  const cudaError_t q = cuda.EventQuery(done);
  if (q == cudaSuccess) return true;
  if (q != cudaErrorNotReady) {
    abort_now();
    check_cuda(cuda, q, what + " on " + label_);
  }
  check_health(deadline, what);
  return false;
}

void NcclCommunicator::wait(const CudaApi& cuda, cudaEvent_t done, Deadline deadline,
                            const std::string& what) {
  Backoff backoff;
  while (!test(cuda, done, deadline, what)) backoff.pause();
}

void NcclCommunicator::allreduce(const void* send, void* recv, size_t count, tandem_dtype_t dtype,
                                 tandem_op_t op, double prescale, double postscale,
                                 cudaStream_t stream, Deadline deadline) {
  check_health(deadline, "ncclAllReduce");
  const NcclReduction red = nccl_reduction(dtype, op, prescale, postscale, nranks_);
  ncclRedOp_t nccl_op = red.op;
  if (red.premul_sum) {
    // NCCL reads the factor from host memory when the op is created, in the
    // data's own type: one custom op per call, destroyed once enqueued.
    const ScalarBits scalar = scalar_bits(red.factor, dtype);
    check_nccl(nccl_, comm_,
               nccl_.RedOpCreatePreMulSum(&nccl_op, const_cast<void*>(scalar.data()), red.dtype,
                                          ncclScalarHostImmediate, comm_),
               "ncclRedOpCreatePreMulSum");
  }
  const ncclResult_t res = nccl_.AllReduce(send, recv, count, red.dtype, nccl_op, comm_, stream);
  if (red.premul_sum) nccl_.RedOpDestroy(nccl_op, comm_);
  check_nccl(nccl_, comm_, res, "ncclAllReduce on " + label_);
  settle(deadline, "ncclAllReduce");
}

void NcclCommunicator::broadcast(const void* send, void* recv, size_t count, tandem_dtype_t dtype,
                                 int root, cudaStream_t stream, Deadline deadline) {
  check_health(deadline, "ncclBroadcast");
  check_nccl(nccl_, comm_,
             nccl_.Broadcast(send, recv, count, nccl_dtype(dtype), root, comm_, stream),
             "ncclBroadcast on " + label_);
  settle(deadline, "ncclBroadcast");
}

void NcclCommunicator::allgather(const void* send, void* recv, size_t count, tandem_dtype_t dtype,
                                 cudaStream_t stream, Deadline deadline) {
  check_health(deadline, "ncclAllGather");
  check_nccl(nccl_, comm_, nccl_.AllGather(send, recv, count, nccl_dtype(dtype), comm_, stream),
             "ncclAllGather on " + label_);
  settle(deadline, "ncclAllGather");
}

void NcclCommunicator::reducescatter(const void* send, void* recv, size_t recv_count,
                                     tandem_dtype_t dtype, tandem_op_t op, cudaStream_t stream,
                                     Deadline deadline) {
  check_health(deadline, "ncclReduceScatter");
  const NcclReduction red = nccl_reduction(dtype, op, 1.0, 1.0, nranks_);
  check_nccl(nccl_, comm_,
             nccl_.ReduceScatter(send, recv, recv_count, red.dtype, red.op, comm_, stream),
             "ncclReduceScatter on " + label_);
  settle(deadline, "ncclReduceScatter");
}

void NcclCommunicator::alltoallv(const void* send, const std::vector<size_t>& send_counts,
                                 void* recv, const std::vector<size_t>& recv_counts,
                                 tandem_dtype_t dtype, cudaStream_t stream, Deadline deadline) {
  if (send_counts.size() != static_cast<size_t>(nranks_) ||
      recv_counts.size() != static_cast<size_t>(nranks_))
    throw InvalidArgument("alltoall on " + label_ + ": expected " + std::to_string(nranks_) +
                          " split sizes, got " + std::to_string(send_counts.size()) +
                          " to send and " + std::to_string(recv_counts.size()) + " to receive");
  check_health(deadline, "alltoall");
  const size_t esize = element_bytes(dtype);
  const ncclDataType_t type = nccl_dtype(dtype);
  // One group: NCCL schedules all pairs together, so the order of the
  // send/recv calls cannot deadlock.
  check_nccl(nccl_, comm_, nccl_.GroupStart(), "ncclGroupStart");
  ncclResult_t res = ncclSuccess;
  size_t send_off = 0, recv_off = 0;
  for (int peer = 0; peer < nranks_ && (res == ncclSuccess || res == ncclInProgress); ++peer) {
    if (send_counts[peer] > 0)
      res = nccl_.Send(static_cast<const char*>(send) + send_off * esize, send_counts[peer], type,
                       peer, comm_, stream);
    if (recv_counts[peer] > 0 && (res == ncclSuccess || res == ncclInProgress))
      res = nccl_.Recv(static_cast<char*>(recv) + recv_off * esize, recv_counts[peer], type, peer,
                       comm_, stream);
    send_off += send_counts[peer];
    recv_off += recv_counts[peer];
  }
  const ncclResult_t end = nccl_.GroupEnd();
  check_nccl(nccl_, comm_, res, "ncclSend/ncclRecv (alltoall) on " + label_);
  check_nccl(nccl_, comm_, end, "ncclGroupEnd (alltoall) on " + label_);
  settle(deadline, "alltoall");
}

ncclRedOp_t NcclCommunicator::make_op(const NcclReduction& red, tandem_dtype_t dtype) {
  if (!red.premul_sum) return red.op;
  ncclRedOp_t op;
  const ScalarBits scalar = scalar_bits(red.factor, dtype);
  check_nccl(nccl_, comm_,
             nccl_.RedOpCreatePreMulSum(&op, const_cast<void*>(scalar.data()), red.dtype,
                                        ncclScalarHostImmediate, comm_),
             "ncclRedOpCreatePreMulSum");
  return op;
}

void NcclCommunicator::release_op(const NcclReduction& red, ncclRedOp_t op) {
  if (red.premul_sum) nccl_.RedOpDestroy(op, comm_);
}

namespace {

bool all_equal(const std::vector<size_t>& counts) {
  return std::adjacent_find(counts.begin(), counts.end(), std::not_equal_to<size_t>()) ==
         counts.end();
}

}  // namespace

void NcclCommunicator::allgatherv(const void* send, void* recv, const std::vector<size_t>& counts,
                                  tandem_dtype_t dtype, cudaStream_t stream, Deadline deadline) {
  if (counts.size() != static_cast<size_t>(nranks_))
    throw InvalidArgument("allgather on " + label_ + ": expected " + std::to_string(nranks_) +
                          " block sizes, got " + std::to_string(counts.size()));
  if (all_equal(counts)) {
    allgather(send, recv, counts.front(), dtype, stream, deadline);
    return;
  }
  check_health(deadline, "allgatherv");
  const size_t esize = element_bytes(dtype);
  const ncclDataType_t type = nccl_dtype(dtype);
  check_nccl(nccl_, comm_, nccl_.GroupStart(), "ncclGroupStart");
  ncclResult_t res = ncclSuccess;
  size_t off = 0;
  for (int root = 0; root < nranks_ && (res == ncclSuccess || res == ncclInProgress); ++root) {
    if (counts[root] > 0)
      res = nccl_.Broadcast(send, static_cast<char*>(recv) + off * esize, counts[root], type, root,
                            comm_, stream);
    off += counts[root];
  }
  const ncclResult_t end = nccl_.GroupEnd();
  check_nccl(nccl_, comm_, res, "ncclBroadcast (allgatherv) on " + label_);
  check_nccl(nccl_, comm_, end, "ncclGroupEnd (allgatherv) on " + label_);
  settle(deadline, "allgatherv");
}

void NcclCommunicator::reducescatterv(const void* send, void* recv,
                                      const std::vector<size_t>& counts, tandem_dtype_t dtype,
                                      tandem_op_t op, double prescale, double postscale,
                                      cudaStream_t stream, Deadline deadline) {
  if (counts.size() != static_cast<size_t>(nranks_))
    throw InvalidArgument("reducescatter on " + label_ + ": expected " + std::to_string(nranks_) +
                          " block sizes, got " + std::to_string(counts.size()));
  check_health(deadline, "reducescatter");
  const NcclReduction red = nccl_reduction(dtype, op, prescale, postscale, nranks_);
  const ncclRedOp_t nccl_op = make_op(red, dtype);
  ncclResult_t res = ncclSuccess, end = ncclSuccess;
  if (all_equal(counts)) {
    res = nccl_.ReduceScatter(send, recv, counts.front(), red.dtype, nccl_op, comm_, stream);
  } else {
    const size_t esize = element_bytes(dtype);
    res = nccl_.GroupStart();
    size_t off = 0;
    for (int root = 0; root < nranks_ && (res == ncclSuccess || res == ncclInProgress); ++root) {
      // recvbuff is read only on the root: every member passes its own.
      if (counts[root] > 0)
        res = nccl_.Reduce(static_cast<const char*>(send) + off * esize, recv, counts[root],
                           red.dtype, nccl_op, root, comm_, stream);
      off += counts[root];
    }
    end = nccl_.GroupEnd();
  }
  release_op(red, nccl_op);
  check_nccl(nccl_, comm_, res, "ncclReduceScatter/ncclReduce on " + label_);
  check_nccl(nccl_, comm_, end, "ncclGroupEnd (reducescatter) on " + label_);
  settle(deadline, "reducescatter");
}

}  // namespace gpu
}  // namespace tandem
