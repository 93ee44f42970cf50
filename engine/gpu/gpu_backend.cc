#include "gpu/gpu_backend.h"

#include <algorithm>
#include <cstring>

#include "common/errors.h"
#include "common/log.h"
#include "gpu/availability.h"
#include "gpu/communicator_cache.h"
#include "gpu/cuda_api.h"
#include "gpu/device_selection.h"
#include "gpu/device_stream.h"
#include "gpu/fusion_buffer.h"
#include "gpu/gpu_errors.h"
#include "gpu/nccl_api.h"
#include "gpu/nccl_communicator.h"
#include "gpu/nccl_types.h"
#include "gpu/unique_id_exchange.h"

namespace tandem {
namespace gpu {

class GpuWork {
 public:
  GpuWork(const CudaApi& cuda, std::shared_ptr<NcclCommunicator> comm, Deadline deadline,
          std::string what)
      : done(cuda), comm(std::move(comm)), deadline(deadline), what(std::move(what)) {}
  Event done;
  std::shared_ptr<NcclCommunicator> comm;  // kept alive while in flight
  Deadline deadline;
  std::string what;
  bool finished = false;
};

namespace {

class NcclUniqueIdSource : public UniqueIdSource {
 public:
  explicit NcclUniqueIdSource(const NcclApi& nccl) : nccl_(nccl) {}
  UniqueId create() override {
    ncclUniqueId raw;
    check_nccl(nccl_, nullptr, nccl_.GetUniqueId(&raw), "ncclGetUniqueId");
    UniqueId id;
    std::memcpy(id.data(), raw.internal, kUniqueIdBytes);
    return id;
  }

 private:
  const NcclApi& nccl_;
};

const char* kind_name(GpuOpKind k) {
  switch (k) {
    case GpuOpKind::kAllreduce: return "allreduce";
    case GpuOpKind::kBroadcast: return "broadcast";
    case GpuOpKind::kAllgather: return "allgather";
    case GpuOpKind::kAlltoall: return "alltoall";
    case GpuOpKind::kReducescatter: return "reducescatter";
  }
  return "?";
}

class NcclBackend : public GpuBackend {
 public:
  NcclBackend(const Identity& me, CudaApi cuda, NcclApi nccl, DeviceChoice choice,
              std::chrono::milliseconds timeout)
      : me_(me),
        api_(std::make_shared<const CudaApi>(std::move(cuda))),
        cuda_(*api_),
        nccl_(std::move(nccl)),
        choice_(std::move(choice)),
        timeout_(timeout),
        ids_(nccl_),
        cache_([this](const CommSpec& spec) -> std::shared_ptr<DeviceComm> {
          use_device();
          return NcclCommunicator::create(nccl_, spec, timeout_);
        }) {
    use_device();
    stream_ = std::make_unique<Stream>(cuda_);
    fusion_ = std::make_unique<DeviceFusionBuffer>(cuda_);
  }

  void add_process_set(Bootstrap& bootstrap, int set_id, std::vector<int> members) override {
    auto id = exchange_unique_id(bootstrap, set_id, members, ids_, timeout_);
    if (id) cache_.add(set_id, std::move(members), me_.rank, *id);
  }

  void remove_process_set(int set_id) override { cache_.remove(set_id); }

  std::shared_ptr<GpuWork> enqueue(const GpuRequest& req) override {
    use_device();
    const std::string what = std::string(kind_name(req.kind)) + " '" + req.name + "'";
    auto comm = std::static_pointer_cast<NcclCommunicator>(cache_.get(req.process_set));
    const Deadline deadline = std::chrono::steady_clock::now() + timeout_;
    std::vector<cudaStream_t> frameworks;
    for (void* f : req.framework_streams) {
      auto fs = static_cast<cudaStream_t>(f);
      if (std::find(frameworks.begin(), frameworks.end(), fs) == frameworks.end())
        frameworks.push_back(fs);
    }
    if (frameworks.empty()) frameworks.push_back(nullptr);  // the legacy default stream
    const cudaStream_t s = stream_->get();

    // Ready: tandem's stream starts after the framework's queued writes.
    for (cudaStream_t framework : frameworks) {
      Event ready(cuda_);
      check_cuda(cuda_, cuda_.EventRecord(ready.get(), framework), what + ": recording readiness");
      check_cuda(cuda_, cuda_.StreamWaitEvent(s, ready.get(), 0), what + ": waiting for readiness");
    }
    issue(*comm, req, what, s, deadline);

    auto work = std::make_shared<GpuWork>(cuda_, comm, deadline, what);
    check_cuda(cuda_, cuda_.EventRecord(work->done.get(), s), what + ": recording completion");
    for (cudaStream_t framework : frameworks)
      check_cuda(cuda_, cuda_.StreamWaitEvent(framework, work->done.get(), 0),
                 what + ": making the framework stream wait");
    return work;
  }

  bool test(GpuWork& w) override {
    if (w.finished) return true;
    use_device();
    w.finished = w.comm->test(cuda_, w.done.get(), w.deadline, w.what);
    return w.finished;
  }

  void wait(GpuWork& w) override {
    if (w.finished) return;
    use_device();
    w.comm->wait(cuda_, w.done.get(), w.deadline, w.what);
    w.finished = true;
  }

  void abort_all(const std::string& reason) override { cache_.abort_all(reason); }

  std::shared_ptr<void> allocate(size_t bytes) override {
    use_device();
    void* p = nullptr;
    if (bytes > 0)
      check_cuda(cuda_, cuda_.Malloc(&p, bytes),
                 "cudaMalloc of a " + std::to_string(bytes) + "-byte result");
    // The deleter holds the table: results may outlive the backend.
    std::shared_ptr<const CudaApi> api = api_;
    return std::shared_ptr<void>(p, [api](void* q) {
      if (q != nullptr) api->Free(q);
    });
  }

  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    check_cuda(cuda_, cuda_.Memcpy(dst, src, bytes, cudaMemcpyDefault),
               "cudaMemcpy of a " + std::to_string(bytes) + "-byte result");
  }

  int device() const override { return choice_.device; }

  std::string describe() const override {
    return "GPU " + std::to_string(choice_.device) + " (" + choice_.why + "), CUDA runtime " +
           cuda_version_string(cuda_.runtime_version) + " at " + cuda_.path + ", NCCL " +
           nccl_version_string(nccl_.version) + " at " + nccl_.path;
  }

 private:
  // The current device is per host thread in CUDA: set it on whichever
  // thread calls in (cheap when unchanged).
  void use_device() {
    check_cuda(cuda_, cuda_.SetDevice(choice_.device),
               "cudaSetDevice(" + std::to_string(choice_.device) + ")");
  }

  void issue(NcclCommunicator& comm, const GpuRequest& req, const std::string& what, cudaStream_t s,
             Deadline deadline) {
    if (req.tensors.empty()) throw InvalidArgument(what + ": no tensor given");
    if (req.kind != GpuOpKind::kAllreduce && req.tensors.size() != 1)
      throw InvalidArgument(what + ": takes exactly one tensor, got " +
                            std::to_string(req.tensors.size()));
    const GpuTensor& t = req.tensors.front();
    switch (req.kind) {
      case GpuOpKind::kAllreduce:
        if (req.tensors.size() == 1)
          comm.allreduce(t.send, t.recv, t.count, req.dtype, req.op, req.prescale, req.postscale, s,
                         deadline);
        else fused_allreduce(comm, req, s, deadline);
        return;
      case GpuOpKind::kBroadcast:
        comm.broadcast(t.send, t.recv, t.count, req.dtype, req.root, s, deadline);
        return;
      case GpuOpKind::kAllgather:
        if (req.recv_counts.empty())
          comm.allgather(t.send, t.recv, t.count, req.dtype, s, deadline);
        else comm.allgatherv(t.send, t.recv, req.recv_counts, req.dtype, s, deadline);
        return;
      case GpuOpKind::kReducescatter:
        if (req.recv_counts.empty())
          comm.reducescatter(t.send, t.recv, t.count, req.dtype, req.op, s, deadline);
        else
          comm.reducescatterv(t.send, t.recv, req.recv_counts, req.dtype, req.op, req.prescale,
                              req.postscale, s, deadline);
        return;
      case GpuOpKind::kAlltoall:
        comm.alltoallv(t.send, req.send_counts, t.recv, req.recv_counts, req.dtype, s, deadline);
        return;
    }
  }

  // Pack, reduce in place in the fusion buffer, unpack: three stream-ordered
  // steps, the copies batched.
  void fused_allreduce(NcclCommunicator& comm, const GpuRequest& req, cudaStream_t s,
                       Deadline deadline) {
    const size_t esize = element_bytes(req.dtype);
    std::vector<size_t> bytes;
    for (const auto& t : req.tensors) bytes.push_back(t.count * esize);
    size_t total = 0;
    const auto offsets = fusion_offsets(bytes, &total);
    char* buf = static_cast<char*>(fusion_->reserve(total));
    std::vector<CopyRegion> in, out;
    for (size_t i = 0; i < req.tensors.size(); ++i) {
      in.push_back({buf + offsets[i], req.tensors[i].send, bytes[i]});
      out.push_back({req.tensors[i].recv, buf + offsets[i], bytes[i]});
    }
    batched_copy(cuda_, in, s);
    comm.allreduce(buf, buf, total / esize, req.dtype, req.op, req.prescale, req.postscale, s,
                   deadline);
    batched_copy(cuda_, out, s);
  }

  Identity me_;
  std::shared_ptr<const CudaApi> api_;  // shared with allocate()'s deleters
  const CudaApi& cuda_;
  NcclApi nccl_;
  DeviceChoice choice_;
  std::chrono::milliseconds timeout_;
  NcclUniqueIdSource ids_;
  CommunicatorCache cache_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<DeviceFusionBuffer> fusion_;
};

}  // namespace

std::unique_ptr<GpuBackend> GpuBackend::create(const Identity& me, const GpuSettings& settings,
                                               std::chrono::milliseconds timeout) {
  const GpuStatus status = probe(settings);
  if (!status.available) throw UnsupportedError(status.reason);
  CudaApi cuda = CudaApi::load(settings);
  NcclApi nccl = NcclApi::load(settings);
  DeviceChoice choice =
      select_device(settings.device, me.local_rank, me.local_size, status.facts.device_count);
  TANDEM_INFO(gpu, "GPU tensors through NCCL: %s; CUDA device %d (%s)", status.reason.c_str(),
              choice.device, choice.why.c_str());
  return std::make_unique<NcclBackend>(me, std::move(cuda), std::move(nccl), std::move(choice),
                                       timeout);
}

}  // namespace gpu
}  // namespace tandem
