// The C functions of the runtime section of tandem.h: argument conversion,
// handle lookup and result codes. All logic lives in runtime/.
#include "api/runtime_api.h"

#include <cstring>
#include <algorithm>
#include <mutex>
#include <thread>

#include "api/device_stream.h"
#include "api/guard.h"
#include "api/join.h"
#include "api/state.h"
#include "runtime/communicator_data_path.h"
#include "runtime/gpu_data_path.h"
#include "common/errors.h"
#include "common/settings.h"

namespace tandem::api {
namespace {

constexpr const char* kNotInitialized =
    "the tandem runtime is not running: call tandem_init() first (and not after "
    "tandem_finalize())";

// Runs body with the runtime, mapping "not installed" to NOT_INITIALIZED.
template <typename F>
tandem_result_t with_runtime(F&& body) noexcept {
  std::shared_ptr<runtime::Runtime> rt;
  {
    std::lock_guard<std::mutex> lock(state.mu);
    rt = state.runtime;
  }
  if (!rt) {
    set_last_error(kNotInitialized);
    return TANDEM_ERR_NOT_INITIALIZED;
  }
  return guarded([&] { body(*rt); });
}

template <typename F>
tandem_result_t with_handle(tandem_handle_t h, F&& body) noexcept {
  return with_runtime([&](runtime::Runtime& rt) {
    auto state = rt.handles().find(h);
    if (!state)
      throw InvalidArgument("handle " + std::to_string(h) +
                            " is not a live handle (released, or never returned)");
    body(rt, *state);
  });
}

runtime::TensorArg convert(const tandem_tensor_t* t) {
  if (!t) throw InvalidArgument("tensor is NULL");
  if (!t->name) throw InvalidArgument("tensor name is NULL");
  if (t->ndim < 0 || t->ndim > 32)
    throw InvalidArgument(std::string("'") + t->name + "': ndim " + std::to_string(t->ndim) +
                          " is out of range 0..32");
  if (t->ndim > 0 && !t->shape)
    throw InvalidArgument(std::string("'") + t->name + "': shape is NULL with ndim > 0");
  runtime::TensorArg a;
  a.name = t->name;
  a.input = t->input;
  a.output = t->output;
  a.dtype = t->dtype;
  a.device = t->device;
  a.shape.assign(t->shape, t->shape + t->ndim);
  if (t->device != TANDEM_DEVICE_CPU) a.stream = current_device_stream();
  return a;
}

tandem_result_t enqueue(const tandem_tensor_t* tensors, int count, const runtime::OpArgs& args,
                        tandem_handle_t* handle) {
  return with_runtime([&](runtime::Runtime& rt) {
    if (!handle) throw InvalidArgument("handle is NULL");
    if (count <= 0 || !tensors) throw InvalidArgument("no tensors given");
    std::vector<runtime::TensorArg> ts;
    for (int i = 0; i < count; ++i) ts.push_back(convert(&tensors[i]));
    *handle = rt.enqueue(ts, args)->id();
  });
}

}  // namespace

void install_runtime(std::unique_ptr<runtime::Runtime> rt) {
  std::lock_guard<std::mutex> lock(state.mu);
  state.runtime = std::move(rt);
}

std::unique_ptr<runtime::Runtime> make_runtime(Communicator& world) {
  runtime::Settings settings = runtime::Settings::from_environment();
  const CommunicatorOptions options = CommunicatorOptions::from_environment();
  auto factory = std::make_unique<runtime::CommunicatorDataPathFactory>(
      world.bootstrap(), job_transport(), options, settings.fusion_threshold_bytes,
      settings.wake_relay, job_round_relay());
  const Identity& id = world.identity();
  runtime::RankPlace place;
  if (settings.straggler_report_seconds > 0) {
    // The GPU the rank uses: TANDEM_GPU_DEVICE, else its local rank
    // (gpu/device_selection.h).
    const std::optional<int64_t> device = env_int_if_set("TANDEM_GPU_DEVICE");
    place = runtime::this_process_place(device ? static_cast<int>(*device) : id.local_rank);
  }
  auto gpu = runtime::make_gpu_data_path(id, options.timeout);
  return std::make_unique<runtime::Runtime>(id.rank, id.size, std::move(factory),
                                            std::move(settings), nullptr, std::move(gpu),
                                            std::move(place));
}

void uninstall_runtime() {
  std::shared_ptr<runtime::Runtime> rt;
  {
    std::lock_guard<std::mutex> lock(state.mu);
    rt.swap(state.runtime);
  }
  if (rt) rt->stop();
  // C calls in flight hold their own reference and end soon (a wait in
  // progress ends when the runtime fails its handles); destroying the
  // runtime on this thread keeps finalize synchronous.
  while (rt && rt.use_count() > 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace tandem::api

using tandem::api::with_handle;
using tandem::api::with_runtime;
namespace rt = tandem::runtime;

extern "C" {

TANDEM_API tandem_result_t tandem_enqueue_allreduce(const tandem_tensor_t* tensor, tandem_op_t op,
                                                    double prescale, double postscale,
                                                    int process_set, tandem_handle_t* handle) {
  return tandem_enqueue_grouped_allreduce(tensor, 1, op, prescale, postscale, process_set, handle);
}

TANDEM_API tandem_result_t tandem_enqueue_grouped_allreduce(const tandem_tensor_t* tensors,
                                                            int count, tandem_op_t op,
                                                            double prescale, double postscale,
                                                            int process_set,
                                                            tandem_handle_t* handle) {
  rt::OpArgs a;
  a.type = rt::OpType::kAllreduce;
  a.op = op;
  a.prescale = prescale;
  a.postscale = postscale;
  a.process_set = process_set;
  return tandem::api::enqueue(tensors, count, a, handle);
}

TANDEM_API tandem_result_t tandem_enqueue_broadcast(const tandem_tensor_t* tensor, int root,
                                                    int process_set, tandem_handle_t* handle) {
  rt::OpArgs a;
  a.type = rt::OpType::kBroadcast;
  a.root = root;
  a.process_set = process_set;
  return tandem::api::enqueue(tensor, 1, a, handle);
}

TANDEM_API tandem_result_t tandem_enqueue_allgather(const tandem_tensor_t* tensor, int process_set,
                                                    tandem_handle_t* handle) {
  rt::OpArgs a;
  a.type = rt::OpType::kAllgather;
  a.process_set = process_set;
  return tandem::api::enqueue(tensor, 1, a, handle);
}

TANDEM_API tandem_result_t tandem_enqueue_alltoall(const tandem_tensor_t* tensor,
                                                   const int64_t* splits, int nsplits,
                                                   int process_set, tandem_handle_t* handle) {
  rt::OpArgs a;
  a.type = rt::OpType::kAlltoall;
  a.process_set = process_set;
  if (nsplits < 0 || (nsplits > 0 && !splits)) {
    tandem::set_last_error("alltoall: splits is NULL or nsplits is negative");
    return TANDEM_ERR_INVALID_ARGUMENT;
  }
  if (nsplits > 0) a.splits.assign(splits, splits + nsplits);
  return tandem::api::enqueue(tensor, 1, a, handle);
}

TANDEM_API tandem_result_t tandem_enqueue_reducescatter(const tandem_tensor_t* tensor,
                                                        tandem_op_t op, double prescale,
                                                        double postscale, int process_set,
                                                        tandem_handle_t* handle) {
  rt::OpArgs a;
  a.type = rt::OpType::kReducescatter;
  a.op = op;
  a.prescale = prescale;
  a.postscale = postscale;
  a.process_set = process_set;
  return tandem::api::enqueue(tensor, 1, a, handle);
}

TANDEM_API tandem_result_t tandem_enqueue_barrier(int process_set, tandem_handle_t* handle) {
  rt::OpArgs a;
  a.type = rt::OpType::kBarrier;
  a.process_set = process_set;
  // One barrier in flight per set and rank; the name is the same on all.
  // Shape [0]: no elements, so no input (ndim 0 would be a one-element scalar).
  static const int64_t kNoElements[1] = {0};
  tandem_tensor_t t{"tandem:barrier",  nullptr, nullptr,    TANDEM_UINT8,
                    TANDEM_DEVICE_CPU, 1,       kNoElements};
  return tandem::api::enqueue(&t, 1, a, handle);
}

TANDEM_API tandem_result_t tandem_enqueue_join(int device, tandem_handle_t* handle) {
  return with_runtime([&](rt::Runtime& r) {
    if (!handle) throw tandem::InvalidArgument("handle is NULL");
    if (device != TANDEM_DEVICE_CPU)
      throw tandem::UnsupportedError("join: GPU devices are not supported yet; pass -1");
    *handle = r.join()->id();
  });
}

TANDEM_API tandem_result_t tandem_handle_poll(tandem_handle_t handle) {
  tandem_result_t out = TANDEM_ERR_IN_PROGRESS;
  tandem_result_t r = with_handle(handle, [&](rt::Runtime&, rt::HandleState& h) {
    out = h.result();
    if (out != TANDEM_SUCCESS && out != TANDEM_ERR_IN_PROGRESS) tandem::set_last_error(h.error());
  });
  return r == TANDEM_SUCCESS ? out : r;
}

TANDEM_API tandem_result_t tandem_handle_wait(tandem_handle_t handle, double timeout_seconds) {
  tandem_result_t out = TANDEM_ERR_IN_PROGRESS;
  tandem_result_t r = with_handle(handle, [&](rt::Runtime& runtime, rt::HandleState& h) {
    rt::Runtime::BlockedWaiter blocked(runtime, h);
    if (timeout_seconds < 0) h.wait();
    else
      h.wait_until(std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                       std::chrono::duration<double>(timeout_seconds)));
    out = h.result();
    if (out != TANDEM_SUCCESS && out != TANDEM_ERR_IN_PROGRESS) tandem::set_last_error(h.error());
  });
  return r == TANDEM_SUCCESS ? out : r;
}

TANDEM_API tandem_result_t tandem_handle_set_callback(tandem_handle_t handle,
                                                      tandem_callback_t callback, void* user_data) {
  return with_handle(handle, [&](rt::Runtime&, rt::HandleState& h) {
    if (!callback) throw tandem::InvalidArgument("callback is NULL");
    h.set_callback(callback, user_data);
  });
}

TANDEM_API const char* tandem_handle_error(tandem_handle_t handle) {
  const char* out = "";
  with_handle(handle, [&](rt::Runtime&, rt::HandleState& h) { out = h.error_cstr(); });
  return out;
}

namespace {
const rt::TensorOutput& done_output(rt::HandleState& h, int index) {
  if (!h.done()) throw tandem::InvalidArgument("the handle is still in progress; wait first");
  const rt::TensorOutput* o = h.output(index);
  if (!o) throw tandem::InvalidArgument("no output " + std::to_string(index) + " on this handle");
  return *o;
}
}  // namespace

TANDEM_API tandem_result_t tandem_handle_output_shape(tandem_handle_t handle, int index,
                                                      int64_t* shape, int max_ndim, int* ndim) {
  return with_handle(handle, [&](rt::Runtime&, rt::HandleState& h) {
    const rt::TensorOutput& o = done_output(h, index);
    if (!ndim) throw tandem::InvalidArgument("ndim is NULL");
    *ndim = static_cast<int>(o.shape.size());
    if (static_cast<int>(o.shape.size()) > max_ndim || (!shape && !o.shape.empty()))
      throw tandem::InvalidArgument("shape has room for " + std::to_string(max_ndim) +
                                    " dims, the output has " + std::to_string(o.shape.size()));
    std::copy(o.shape.begin(), o.shape.end(), shape);
  });
}

TANDEM_API tandem_result_t tandem_handle_output_data(tandem_handle_t handle, int index,
                                                     const void** data, size_t* bytes) {
  return with_handle(handle, [&](rt::Runtime&, rt::HandleState& h) {
    const rt::TensorOutput& o = done_output(h, index);
    if (!data || !bytes) throw tandem::InvalidArgument("data or bytes is NULL");
    if (o.device) {  // a GPU tensor's result: a device pointer
      *data = o.device->memory.get();
      *bytes = o.device->bytes;
      return;
    }
    *data = o.data.data();
    *bytes = o.data.size();
  });
}

TANDEM_API tandem_result_t tandem_handle_copy_output(tandem_handle_t handle, int index, void* dst,
                                                     size_t bytes) {
  return with_handle(handle, [&](rt::Runtime&, rt::HandleState& h) {
    const rt::TensorOutput& o = done_output(h, index);
    const size_t held = o.device ? o.device->bytes : o.data.size();
    if (bytes != held)
      throw tandem::InvalidArgument("copy_output: " + std::to_string(bytes) +
                                    " bytes given, the output holds " + std::to_string(held));
    if (bytes && !dst) throw tandem::InvalidArgument("dst is NULL");
    if (bytes && o.device) o.device->copy(dst, o.device->memory.get(), bytes);
    else if (bytes) std::memcpy(dst, o.data.data(), bytes);
  });
}

TANDEM_API tandem_result_t tandem_handle_received_splits(tandem_handle_t handle, int64_t* splits,
                                                         int nsplits) {
  return with_handle(handle, [&](rt::Runtime&, rt::HandleState& h) {
    if (!h.done()) throw tandem::InvalidArgument("the handle is still in progress; wait first");
    const auto& s = h.received_splits();
    if (static_cast<size_t>(nsplits) != s.size() || (!splits && nsplits))
      throw tandem::InvalidArgument("received_splits: room for " + std::to_string(nsplits) +
                                    ", the alltoall has " + std::to_string(s.size()) + " ranks");
    std::copy(s.begin(), s.end(), splits);
  });
}

TANDEM_API tandem_result_t tandem_handle_join_result(tandem_handle_t handle, int* last_rank) {
  return with_handle(handle, [&](rt::Runtime&, rt::HandleState& h) {
    if (!h.done()) throw tandem::InvalidArgument("the join is still in progress; wait first");
    if (!last_rank) throw tandem::InvalidArgument("last_rank is NULL");
    *last_rank = h.int_result();
  });
}

TANDEM_API void tandem_handle_release(tandem_handle_t handle) {
  with_runtime([&](rt::Runtime& r) { r.handles().release(handle); });
}

TANDEM_API tandem_result_t tandem_add_process_set(const int* ranks, int nranks, int* id) {
  return with_runtime([&](rt::Runtime& r) {
    if (!id || nranks <= 0 || !ranks) throw tandem::InvalidArgument("add_process_set: no ranks");
    *id = r.add_process_set(std::vector<int>(ranks, ranks + nranks));
  });
}

TANDEM_API tandem_result_t tandem_remove_process_set(int id) {
  return with_runtime([&](rt::Runtime& r) { r.remove_process_set(id); });
}

TANDEM_API tandem_result_t tandem_process_set_rank(int id, int* rank) {
  return with_runtime([&](rt::Runtime& r) {
    if (!rank) throw tandem::InvalidArgument("rank is NULL");
    auto ranks = r.process_set_ranks(id);
    auto it = std::find(ranks.begin(), ranks.end(), r.rank());
    *rank = it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
  });
}

TANDEM_API tandem_result_t tandem_process_set_size(int id, int* size) {
  return with_runtime([&](rt::Runtime& r) {
    if (!size) throw tandem::InvalidArgument("size is NULL");
    *size = static_cast<int>(r.process_set_ranks(id).size());
  });
}

TANDEM_API tandem_result_t tandem_process_set_ranks(int id, int* ranks, int max, int* n) {
  return with_runtime([&](rt::Runtime& r) {
    if (!n) throw tandem::InvalidArgument("n is NULL");
    auto all = r.process_set_ranks(id);
    *n = static_cast<int>(all.size());
    if (static_cast<int>(all.size()) > max || !ranks)
      throw tandem::InvalidArgument("ranks has room for " + std::to_string(max) + ", the set has " +
                                    std::to_string(all.size()));
    std::copy(all.begin(), all.end(), ranks);
  });
}

TANDEM_API tandem_result_t tandem_start_timeline(const char* path, int mark_cycles) {
  return with_runtime([&](rt::Runtime& r) {
    if (!path || !*path) throw tandem::InvalidArgument("start_timeline: empty path");
    if (r.rank() == 0) r.timeline().start(path, mark_cycles != 0);
  });
}

TANDEM_API tandem_result_t tandem_stop_timeline(void) {
  return with_runtime([&](rt::Runtime& r) { r.timeline().stop(); });
}

TANDEM_API tandem_result_t tandem_runtime_counter(int index, const char** name, uint64_t* value) {
  return with_runtime([&](rt::Runtime& r) {
    if (index < 0 || index >= static_cast<int>(rt::Counter::kCount_))
      throw tandem::InvalidArgument("no runtime counter " + std::to_string(index));
    if (!name || !value) throw tandem::InvalidArgument("name or value is NULL");
    auto c = static_cast<rt::Counter>(index);
    *name = rt::counter_name(c);
    *value = r.counters().get(c);
  });
}

TANDEM_API tandem_result_t tandem_straggler_report(char* buf, size_t size, size_t* needed) {
  return with_runtime([&](rt::Runtime& r) {
    if (!needed) throw tandem::InvalidArgument("straggler_report: needed is NULL");
    if (size > 0 && !buf) throw tandem::InvalidArgument("straggler_report: buf is NULL");
    const std::string json = r.straggler_json();
    *needed = json.size() + 1;
    if (size == 0) return;
    const size_t n = std::min(size - 1, json.size());
    std::memcpy(buf, json.data(), n);
    buf[n] = '\0';
  });
}

TANDEM_API tandem_result_t tandem_autotune_state(char* buf, size_t size, size_t* needed) {
  return with_runtime([&](rt::Runtime& r) {
    if (!needed) throw tandem::InvalidArgument("autotune_state: needed is NULL");
    if (size > 0 && !buf) throw tandem::InvalidArgument("autotune_state: buf is NULL");
    const std::string json = r.autotune_json();
    *needed = json.size() + 1;
    if (size == 0) return;
    const size_t n = std::min(size - 1, json.size());
    std::memcpy(buf, json.data(), n);
    buf[n] = '\0';
  });
}

}  // extern "C"
