#include "runtime/gpu_data_path.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "common/errors.h"

namespace tandem::runtime {
namespace {

// The set's members seen as a world for the NCCL id exchange: ranks keep
// their world numbers (the backend's communicator cache speaks world
// ranks), and a round is one exchange over the set's host data path, so
// only members take part. Bounded by that data path's own deadline.
class SetBootstrap : public Bootstrap {
 public:
  SetBootstrap(DataPath& path, const Identity& world, const std::vector<int>& members)
      : path_(path), world_(world), members_(members) {}
  const Identity& identity() const override { return world_; }
  std::vector<Bytes> allgather(const Bytes& mine, std::chrono::milliseconds) override {
    std::vector<Bytes> blobs = path_.exchange(mine);
    std::vector<Bytes> out(static_cast<size_t>(world_.size));
    for (size_t k = 0; k < members_.size() && k < blobs.size(); ++k)
      out[static_cast<size_t>(members_[k])] = std::move(blobs[k]);
    return out;
  }

 private:
  DataPath& path_;
  const Identity& world_;
  const std::vector<int>& members_;
};

gpu::GpuOpKind kind_of(OpType t) {
  switch (t) {
    case OpType::kAllreduce: return gpu::GpuOpKind::kAllreduce;
    case OpType::kBroadcast: return gpu::GpuOpKind::kBroadcast;
    case OpType::kAllgather: return gpu::GpuOpKind::kAllgather;
    case OpType::kAlltoall: return gpu::GpuOpKind::kAlltoall;
    case OpType::kReducescatter: return gpu::GpuOpKind::kReducescatter;
    default:
      throw Error(std::string("runtime: ") + op_type_name(t) +
                  " reached the GPU path; this is a bug in tandem");
  }
}

std::string label_of(const std::vector<const Response*>& responses) {
  std::string l =
      std::string(op_type_name(responses.front()->type)) + " '" + responses.front()->name + "'";
  if (responses.size() > 1) l += " (fused with " + std::to_string(responses.size() - 1) + " more)";
  return l;
}

Bytes encode(tandem_result_t code, const std::string& why) {
  Bytes b(sizeof(int32_t) + why.size());
  const auto c = static_cast<int32_t>(code);
  std::memcpy(b.data(), &c, sizeof c);
  std::memcpy(b.data() + sizeof c, why.data(), why.size());
  return b;
}

std::vector<DevicePath::Result> all_failed(size_t n, tandem_result_t code, const std::string& why) {
  std::vector<DevicePath::Result> out(n);
  for (auto& r : out) {
    r.code = code;
    r.error = why;
  }
  return out;
}

size_t to_size(int64_t v) { return static_cast<size_t>(v); }

}  // namespace

GpuDataPath::GpuDataPath(Identity me, BackendFactory factory)
    : me_(std::move(me)), factory_(std::move(factory)) {}

GpuDataPath::~GpuDataPath() = default;

gpu::GpuBackend* GpuDataPath::backend() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!tried_) {
    tried_ = true;
    try {
      backend_ = factory_();
    } catch (const UnsupportedError& e) {
      unusable_ = {TANDEM_ERR_UNSUPPORTED, e.what()};
    } catch (const std::exception& e) {
      // A bad setting (TANDEM_GPU_DEVICE=x), a device that would not start.
      unusable_ = {TANDEM_ERR_INVALID_ARGUMENT, e.what()};
    }
  }
  return backend_.get();
}

GpuDataPath::Verdict GpuDataPath::local_verdict(const std::vector<const Response*>& responses,
                                                const std::vector<TensorEntry*>& entries) {
  gpu::GpuBackend* b = backend();
  if (!b) return unusable_;
  for (size_t i = 0; i < responses.size(); ++i) {
    if (!entries[i]) continue;
    const int device = entries[i]->request.device;
    if (device != b->device())
      return {TANDEM_ERR_INVALID_ARGUMENT,
              "rank " + std::to_string(me_.rank) + " has '" + responses[i]->name + "' on GPU " +
                  std::to_string(device) + " but its GPU path uses GPU " +
                  std::to_string(b->device()) + " (" + b->describe() +
                  "); put the tensor on that GPU or set TANDEM_GPU_DEVICE"};
  }
  return {};
}

GpuDataPath::Verdict GpuDataPath::agree(ExecContext& ctx, const Verdict& mine,
                                        const std::string& label) {
  // One byte first (MAX over the members): a batch every member can run
  // costs an allreduce of one byte (log2 n rounds across nodes), not an
  // allgather of every member's verdict (n slots per rank); the verdicts
  // travel only when some member has a reason to give.
  uint8_t refused = mine.code == TANDEM_SUCCESS ? 0 : 1;
  ctx.data_path.allreduce(&refused, 1, TANDEM_UINT8, TANDEM_MAX, 1.0, 1.0);
  if (!refused) return {};
  std::vector<Bytes> all = ctx.data_path.exchange(encode(mine.code, mine.why));
  // Group identical reasons so that "no driver" on 64 ranks is one line.
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  bool only_unsupported = true;
  for (size_t k = 0; k < all.size(); ++k) {
    if (all[k].size() < sizeof(int32_t))
      throw Error("runtime: a peer sent a " + std::to_string(all[k].size()) +
                  "-byte GPU verdict; every rank must run the same tandem version");
    int32_t code = 0;
    std::memcpy(&code, all[k].data(), sizeof code);
    if (code == TANDEM_SUCCESS) continue;
    only_unsupported &= code == TANDEM_ERR_UNSUPPORTED;
    std::string why(all[k].begin() + sizeof code, all[k].end());
    auto g = std::find_if(groups.begin(), groups.end(), [&](auto& p) { return p.first == why; });
    if (g == groups.end()) groups.push_back({why, {ctx.members[k]}});
    else g->second.push_back(ctx.members[k]);
  }
  if (groups.empty()) return {};
  std::string msg = label + ": GPU tensors cannot run here: ";
  for (size_t i = 0; i < groups.size(); ++i) {
    msg += i ? "; " : "";
    msg += groups[i].second.size() == 1 ? "rank " : "ranks ";
    for (size_t j = 0; j < groups[i].second.size(); ++j)
      msg += (j ? "," : "") + std::to_string(groups[i].second[j]);
    msg += ": " + groups[i].first;
  }
  msg += ". Copy the tensor to the CPU (device -1) or fix the GPU setup (tandem-info)";
  return {only_unsupported ? TANDEM_ERR_UNSUPPORTED : TANDEM_ERR_INVALID_ARGUMENT, msg};
}

void GpuDataPath::register_set(ExecContext& ctx, int set_id) {
  if (registered_.count(set_id)) return;
  SetBootstrap boot(ctx.data_path, me_, ctx.members);
  backend_->add_process_set(boot, set_id, ctx.members);
  registered_.insert(set_id);
}

std::vector<DevicePath::Result> GpuDataPath::run(ExecContext& ctx, int set_id,
                                                 const std::vector<const Response*>& responses,
                                                 const std::vector<TensorEntry*>& entries) {
  const std::string label = label_of(responses);
  for (const Response* r : responses)
    if (r->any_absent())  // the same on every member: no exchange needed
      return all_failed(responses.size(), TANDEM_ERR_UNSUPPORTED,
                        label +
                            ": a rank has joined; join works with host tensors only (a "
                            "joined rank has no GPU buffer to contribute from)");
  const Verdict v = agree(ctx, local_verdict(responses, entries), label);
  if (v.code != TANDEM_SUCCESS) return all_failed(responses.size(), v.code, v.why);
  register_set(ctx, set_id);
  try {
    return execute(ctx, set_id, responses, entries);
  } catch (const UnsupportedError& e) {
    // Decided from the request alone (a scaled MIN on NCCL), before any
    // NCCL call, so every member gets here alike.
    return all_failed(responses.size(), TANDEM_ERR_UNSUPPORTED, e.what());
  }
}

std::vector<DevicePath::Result> GpuDataPath::execute(ExecContext& ctx, int set_id,
                                                     const std::vector<const Response*>& responses,
                                                     const std::vector<TensorEntry*>& entries) {
  gpu::GpuBackend& b = *backend_;
  const Request& q = entries.front()->request;
  const size_t n = ctx.members.size();
  const size_t me = static_cast<size_t>(ctx.set_rank);
  const size_t esize = dtype_bytes(q.dtype);
  const size_t row = to_size(q.row_elements());

  gpu::GpuRequest req;
  req.kind = kind_of(q.type);
  req.name = responses.size() > 1 ? label_of(responses) : q.name;
  req.process_set = set_id;
  req.dtype = static_cast<tandem_dtype_t>(q.dtype);
  req.op = static_cast<tandem_op_t>(q.op);
  req.prescale = q.prescale;
  req.postscale = q.postscale;
  for (TensorEntry* e : entries) req.framework_streams.push_back(e->stream);

  std::vector<Result> out(responses.size());
  std::shared_ptr<void> result;  // engine-allocated output
  size_t result_elements = 0;
  switch (q.type) {
    case OpType::kAllreduce:
      for (TensorEntry* e : entries)
        req.tensors.push_back({e->input, e->output, to_size(e->request.elements())});
      break;
    case OpType::kBroadcast:
      req.root = static_cast<int>(std::find(ctx.members.begin(), ctx.members.end(), q.root) -
                                  ctx.members.begin());
      req.tensors.push_back(
          {q.elements() ? entries[0]->input : nullptr, entries[0]->output, to_size(q.elements())});
      break;
    case OpType::kAllgather: {
      const Response& r = *responses.front();
      int64_t rows = 0;
      for (size_t k = 0; k < n; ++k) {
        const int64_t d0 = r.per_rank()[k].shape[0];
        req.recv_counts.push_back(to_size(d0) * row);
        rows += d0;
      }
      out[0].output.shape = q.shape;
      out[0].output.shape[0] = rows;
      result_elements = to_size(rows) * row;
      break;
    }
    case OpType::kAlltoall: {
      const Response& r = *responses.front();
      int64_t rows = 0;
      for (size_t k = 0; k < n; ++k) {
        req.send_counts.push_back(to_size(q.splits[k]) * row);
        const int64_t in = r.per_rank()[k].splits[me];
        req.recv_counts.push_back(to_size(in) * row);
        out[0].splits.push_back(in);
        rows += in;
      }
      out[0].output.shape = q.shape;
      out[0].output.shape[0] = rows;
      result_elements = to_size(rows) * row;
      break;
    }
    case OpType::kReducescatter: {
      const int64_t rows = q.shape[0], ranks = static_cast<int64_t>(n);
      for (int64_t k = 0; k < ranks; ++k)
        req.recv_counts.push_back(to_size(rows / ranks + (k < rows % ranks ? 1 : 0)) * row);
      out[0].output.shape = q.shape;
      out[0].output.shape[0] = rows / ranks + (static_cast<int64_t>(me) < rows % ranks ? 1 : 0);
      result_elements = req.recv_counts[me];
      break;
    }
    default: kind_of(q.type);  // throws
  }
  if (q.type == OpType::kAllgather || q.type == OpType::kAlltoall ||
      q.type == OpType::kReducescatter) {
    result = b.allocate(result_elements * esize);
    // Allgather and reducescatter count this rank's block; alltoall its input.
    const size_t count = q.type == OpType::kAlltoall ? to_size(q.elements()) : req.recv_counts[me];
    req.tensors.push_back({q.elements() ? entries[0]->input : nullptr, result.get(), count});
    auto data = std::make_shared<DeviceData>();
    data->memory = result;
    data->bytes = result_elements * esize;
    data->device = b.device();
    gpu::GpuBackend* backend = &b;
    data->copy = [backend](void* dst, const void* src, size_t bytes) {
      backend->copy(dst, src, bytes);
    };
    out[0].output.device = std::move(data);
  }

  const char* phase = q.type == OpType::kAllreduce   ? "NCCL_ALLREDUCE"
                      : q.type == OpType::kBroadcast ? "NCCL_BROADCAST"
                      : q.type == OpType::kAllgather ? "NCCL_ALLGATHER"
                      : q.type == OpType::kAlltoall  ? "NCCL_ALLTOALL"
                                                     : "NCCL_REDUCESCATTER";
  for (const Response* r : responses) {
    ctx.timeline.end(r->name);  // QUEUE
    ctx.timeline.begin(r->name, phase);
  }
  auto work = b.enqueue(req);
  if (work) b.wait(*work);
  for (const Response* r : responses) ctx.timeline.end(r->name);
  return out;
}

std::unique_ptr<DevicePath> make_gpu_data_path(const Identity& me,
                                               std::chrono::milliseconds timeout) {
  return std::make_unique<GpuDataPath>(me, [me, timeout] {
    return gpu::GpuBackend::create(me, gpu::GpuSettings::from(gpu::process_environment()), timeout);
  });
}

void GpuDataPath::remove_process_set(int set_id) {
  registered_.erase(set_id);
  std::lock_guard<std::mutex> lock(mu_);
  if (backend_) backend_->remove_process_set(set_id);
}

void GpuDataPath::abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (backend_) backend_->abort_all(reason);
}

}  // namespace tandem::runtime
