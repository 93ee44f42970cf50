// The GPU path as one object the runtime holds: the loaded libraries, this
// rank's device, tandem's stream, the device fusion buffer and the NCCL
// communicators of its process sets. The runtime hands it negotiated GPU
// operations (the "device" field of its requests); everything above this
// file sees no CUDA or NCCL type (streams travel as void*).
//
// Stream protocol, per operation, with no host synchronization:
//   each framework stream --record ready--> tandem stream waits on it
//   tandem stream: fuse (batched copies) -> NCCL -> unfuse -> record done
//   each framework stream waits on done (cudaStreamWaitEvent)
// so kernels the framework queues after the operation see its result, and
// the host only polls `done` to complete the handle and enforce the deadline.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "gpu/gpu_settings.h"
#include "tandem/tandem.h"

namespace tandem {
namespace gpu {

enum class GpuOpKind { kAllreduce, kBroadcast, kAllgather, kAlltoall, kReducescatter };

struct GpuTensor {
  const void* send = nullptr;  // device pointers; send == recv for in place
  void* recv = nullptr;
  size_t count = 0;  // elements sent (allgather/reducescatter: this rank's block)
};

struct GpuRequest {
  GpuOpKind kind = GpuOpKind::kAllreduce;
  std::string name;  // for messages
  int process_set = 0;
  tandem_dtype_t dtype = TANDEM_FLOAT32;
  tandem_op_t op = TANDEM_SUM;
  double prescale = 1.0;
  double postscale = 1.0;
  int root = 0;  // broadcast: index of the root among the set's members
  // Allreduce takes many (fused when more than one); the others take one.
  std::vector<GpuTensor> tensors;
  // Elements per member: alltoall both; allgather and reducescatter
  // recv_counts (each member's block; may be uneven). Empty for allgather or
  // reducescatter: even blocks of tensors[0].count.
  std::vector<size_t> send_counts, recv_counts;
  // cudaStream_t of the framework, one per distinct stream the tensors came
  // from (a fused batch may gather several); empty = the legacy default.
  std::vector<void*> framework_streams;
};

class GpuWork;  // an operation in flight (opaque; see gpu_backend.cc)

class GpuBackend {
 public:
  // Loads CUDA and NCCL, selects and sets this rank's device. Throws
  // UnsupportedError with probe()'s reason (the caller names the rank) when
  // the GPU path cannot run (always, in a build without the CUDA headers:
  // gpu_backend_without_headers.cc).
  // timeout: the engine's TANDEM_TIMEOUT, bound of every GPU wait.
  static std::unique_ptr<GpuBackend> create(const Identity& me, const GpuSettings& settings,
                                            std::chrono::milliseconds timeout);
  virtual ~GpuBackend() = default;

  // Collective over every rank of the bootstrap's world (see
  // unique_id_exchange.h); members get a communicator on first use.
  virtual void add_process_set(Bootstrap& bootstrap, int set_id, std::vector<int> members) = 0;
  virtual void remove_process_set(int set_id) = 0;

  // Queues the operation behind the framework stream's current work; null
  // when it completed within the call, so there is nothing to wait for.
  virtual std::shared_ptr<GpuWork> enqueue(const GpuRequest& request) = 0;
  // True once done; throws the operation's error (timeout, lost peer).
  virtual bool test(GpuWork& work) = 0;
  virtual void wait(GpuWork& work) = 0;

  // Lost peer (reported by the CPU path): abort every communicator; pending
  // and later operations fail with reason, which should name the rank.
  virtual void abort_all(const std::string& reason) = 0;

  // Device memory on this rank's GPU for engine-allocated results (allgather,
  // alltoall, reducescatter); freed when the last owner lets go, even after
  // the backend is gone.
  virtual std::shared_ptr<void> allocate(size_t bytes) = 0;
  // Synchronous copy between any two of device/host memory (cudaMemcpyDefault):
  // engine-allocated results to the caller's tensor. Safe from any thread.
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;

  virtual int device() const = 0;
  virtual std::string describe() const = 0;  // device, why, library versions
};

}  // namespace gpu
}  // namespace tandem
