// The runtime's device path over the NCCL backend (gpu/gpu_backend.h): how a
// negotiated batch of GPU tensors becomes one NCCL operation on tandem's
// stream, ordered after and before the framework's stream.
//
// Per batch, on the runtime thread, at the same point on every member:
//  1. preflight: this rank's verdict (GPU path usable? tensors on this rank's
//     GPU?) is exchanged over the set's host data path, so that a GPU
//     missing or misused on one rank fails the batch on every rank with one
//     message naming each rank and why, instead of leaving the others to
//     time out inside NCCL. One byte's allreduce per device batch, and an
//     exchange of the reasons only when some member refuses.
//  2. the set's NCCL id travels the first time the set runs a GPU batch,
//     over the same host exchange (the set's members are exactly the ranks
//     running this batch, so non-members need not take part).
//  3. the backend fuses the allreduces of the batch into its device buffer,
//     runs the collective and unfuses; the host waits for the done event
//     (bounded by TANDEM_TIMEOUT) before completing the handles.
// Uneven allgather/reducescatter (first dimensions that differ or do not
// divide) run as grouped NCCL broadcasts/reduces. Engine-allocated results
// live in device memory (TensorOutput::device).
//
// The backend is created on the first GPU batch (never for host-only jobs,
// which then create no CUDA context); a failure to create it is kept as
// the reason every later GPU batch reports.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "bootstrap/bootstrap.h"
#include "gpu/gpu_backend.h"
#include "runtime/device_path.h"

namespace tandem::runtime {

class GpuDataPath : public DevicePath {
 public:
  using BackendFactory = std::function<std::unique_ptr<gpu::GpuBackend>()>;
  // me: this rank in the world (the runtime's ranks are world ranks).
  GpuDataPath(Identity me, BackendFactory factory);
  ~GpuDataPath() override;

  std::vector<Result> run(ExecContext& ctx, int set_id,
                          const std::vector<const Response*>& responses,
                          const std::vector<TensorEntry*>& entries) override;
  void remove_process_set(int set_id) override;
  void abort(const std::string& reason) override;

 private:
  struct Verdict {
    tandem_result_t code = TANDEM_SUCCESS;
    std::string why;
  };
  Verdict local_verdict(const std::vector<const Response*>& responses,
                        const std::vector<TensorEntry*>& entries);
  // The preflight exchange; an empty string when every member is ready.
  Verdict agree(ExecContext& ctx, const Verdict& mine, const std::string& label);
  gpu::GpuBackend* backend();  // null when unusable (reason in unusable_)
  void register_set(ExecContext& ctx, int set_id);
  std::vector<Result> execute(ExecContext& ctx, int set_id,
                              const std::vector<const Response*>& responses,
                              const std::vector<TensorEntry*>& entries);

  const Identity me_;
  BackendFactory factory_;
  std::mutex mu_;  // backend_ against abort() from another thread
  std::unique_ptr<gpu::GpuBackend> backend_;
  bool tried_ = false;
  Verdict unusable_;
  std::set<int> registered_;  // sets whose NCCL id the backend holds
};

// The device path tandem_init installs: the NCCL backend with the GPU
// settings of the environment (read when the first GPU batch runs), every
// wait bounded by timeout (TANDEM_TIMEOUT).
std::unique_ptr<DevicePath> make_gpu_data_path(const Identity& me,
                                               std::chrono::milliseconds timeout);

}  // namespace tandem::runtime
