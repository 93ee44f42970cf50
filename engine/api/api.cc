// The C API of include/tandem/tandem.h over one process-wide Communicator:
// init, finalize, identity and the direct collectives. The C API's state
// (the Engine: Communicator + worker thread, and the runtime) lives in
// api/state.h, swapped under its mutex by init/finalize and held by a
// shared_ptr for the duration of every call.
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "api/guard.h"
#include "api/join.h"
#include "api/runtime_api.h"
#include "api/state.h"
#include "api/worker.h"
#include "common/reduce.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/settings.h"
#include "communicator/communicator.h"
#include "tandem/tandem.h"

struct tandem_request_s {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  tandem_result_t result = TANDEM_SUCCESS;
  std::string error;
};

namespace tandem {
namespace {

using api::Engine;
using api::state;

std::shared_ptr<Engine> current() {
  std::lock_guard<std::mutex> lock(state.mu);
  if (!state.engine)
    throw NotInitializedError(
        "tandem is not initialized: call tandem_init() first (and check its result)");
  return state.engine;
}

// Blocking collective: on this thread, after earlier nonblocking ones.
template <typename F>
tandem_result_t blocking(F&& body) noexcept {
  return guarded([&] {
    auto e = current();
    e->worker->run_inline([&] { body(*e->comm); });
  });
}

// Nonblocking collective: checks what can be checked now, then queues.
template <typename Check, typename F>
tandem_result_t nonblocking(tandem_request_t* out, Check&& check, F&& body) noexcept {
  return guarded([&] {
    if (!out)
      throw InvalidArgument("request pointer is NULL; pass the address of a tandem_request_t");
    *out = nullptr;
    auto e = current();
    check(*e->comm);
    auto req = std::make_unique<tandem_request_s>();
    tandem_request_s* r = req.get();
    Communicator* comm = e->comm.get();  // outlives the queue: ~Engine drains it first
    e->worker->submit([comm, r, body]() mutable {
      const tandem_result_t rc = guarded([&] { body(*comm); });
      std::lock_guard<std::mutex> lock(r->mu);
      r->result = rc;
      if (rc != TANDEM_SUCCESS) r->error = last_error_cstr();
      r->done = true;
      r->cv.notify_all();
    });
    *out = req.release();
  });
}

// TANDEM_INFO: what this process runs with that is not the default.
void log_settings() {
  if (!TANDEM_LOG_ENABLED(kInfo, api)) return;
  std::string text;
  for (const std::string& s : settings_differing_from_defaults())
    text += (text.empty() ? "" : ", ") + s;
  TANDEM_INFO(api, "tandem %s initialized; settings that differ from their defaults: %s",
              tandem_version(), text.empty() ? "none" : text.c_str());
}

template <typename T>
tandem_result_t identity_query(T* out, int Identity::*field) noexcept {
  return guarded([&] {
    if (!out) throw InvalidArgument("output pointer is NULL");
    *out = current()->comm->identity().*field;
  });
}

void check_reduce_args(Communicator& c, const void* send, const void* recv, size_t count, int dtype,
                       int op, double pre, double post) {
  (void)c;
  check_reduction("allreduce", dtype, op, pre, post);
  if (count > 0 && (!send || !recv))
    throw InvalidArgument("allreduce: NULL buffer with count " + std::to_string(count));
}

std::vector<size_t> counts_of(const size_t* counts, int size, const char* what) {
  if (!counts) throw InvalidArgument(std::string(what) + " is NULL; pass one count per rank");
  return std::vector<size_t>(counts, counts + size);
}

}  // namespace
}  // namespace tandem

using namespace tandem;

extern "C" {

TANDEM_API size_t tandem_dtype_size(int dtype) { return tandem::dtype_size(dtype); }

TANDEM_API tandem_result_t tandem_init(void) {
  return guarded([] {
    std::lock_guard<std::mutex> lock(state.mu);
    if (state.engine) return;
    log::configure_from_environment();  // a bad TANDEM_LOG fails init, naming it
    auto e = std::make_shared<Engine>();
    // The runtime (named tensors) starts with the engine, so that every
    // tandem_enqueue_* works after tandem_init under any launcher.
    std::unique_ptr<runtime::Runtime> rt;
    e->comm = join_job([&rt](Communicator& c) { rt = api::make_runtime(c); });
    e->worker = std::make_unique<Worker>();
    state.runtime = std::move(rt);
    state.engine = std::move(e);
    log_settings();
  });
}

TANDEM_API tandem_result_t tandem_finalize(void) {
  return guarded([] {
    std::shared_ptr<Engine> e;
    {
      std::lock_guard<std::mutex> lock(state.mu);
      e.swap(state.engine);
    }
    // The runtime first: its last round tells the other ranks to stop, and
    // its Communicators go before the engine's.
    if (e) api::uninstall_runtime();
    // Released here, or by the last call still using it.
  });
}

TANDEM_API int tandem_is_initialized(void) {
  std::lock_guard<std::mutex> lock(state.mu);
  return state.engine ? 1 : 0;
}

TANDEM_API tandem_result_t tandem_rank(int* v) { return identity_query(v, &Identity::rank); }
TANDEM_API tandem_result_t tandem_size(int* v) { return identity_query(v, &Identity::size); }
TANDEM_API tandem_result_t tandem_local_rank(int* v) {
  return identity_query(v, &Identity::local_rank);
}
TANDEM_API tandem_result_t tandem_local_size(int* v) {
  return identity_query(v, &Identity::local_size);
}
TANDEM_API tandem_result_t tandem_cross_rank(int* v) {
  return identity_query(v, &Identity::cross_rank);
}
TANDEM_API tandem_result_t tandem_cross_size(int* v) {
  return identity_query(v, &Identity::cross_size);
}

TANDEM_API tandem_result_t tandem_allreduce(const void* send, void* recv, size_t count,
                                            tandem_dtype_t dtype, tandem_op_t op, double prescale,
                                            double postscale) {
  return blocking(
      [&](Communicator& c) { c.allreduce(send, recv, count, dtype, op, prescale, postscale); });
}

TANDEM_API tandem_result_t tandem_broadcast(void* buf, size_t count, tandem_dtype_t dtype,
                                            int root) {
  return blocking([&](Communicator& c) { c.broadcast(buf, count, dtype, root); });
}

TANDEM_API tandem_result_t tandem_allgather(const void* send, size_t count, void* recv,
                                            tandem_dtype_t dtype) {
  return blocking([&](Communicator& c) { c.allgather(send, count, recv, dtype); });
}

TANDEM_API tandem_result_t tandem_allgatherv(const void* send, size_t send_count, void* recv,
                                             const size_t* recv_counts, tandem_dtype_t dtype) {
  return blocking([&](Communicator& c) {
    c.allgatherv(send, send_count, recv, counts_of(recv_counts, c.identity().size, "recv_counts"),
                 dtype);
  });
}

TANDEM_API tandem_result_t tandem_alltoall(const void* send, void* recv, size_t count,
                                           tandem_dtype_t dtype) {
  return blocking([&](Communicator& c) { c.alltoall(send, recv, count, dtype); });
}

TANDEM_API tandem_result_t tandem_alltoallv(const void* send, const size_t* send_counts, void* recv,
                                            const size_t* recv_counts, tandem_dtype_t dtype) {
  return blocking([&](Communicator& c) {
    const int n = c.identity().size;
    c.alltoallv(send, counts_of(send_counts, n, "send_counts"), recv,
                counts_of(recv_counts, n, "recv_counts"), dtype);
  });
}

TANDEM_API tandem_result_t tandem_reducescatter(const void* send, void* recv,
                                                const size_t* recv_counts, tandem_dtype_t dtype,
                                                tandem_op_t op) {
  return blocking([&](Communicator& c) {
    c.reducescatter(send, recv, counts_of(recv_counts, c.identity().size, "recv_counts"), dtype,
                    op);
  });
}

TANDEM_API tandem_result_t tandem_barrier(void) {
  return blocking([&](Communicator& c) { c.barrier(); });
}

TANDEM_API tandem_result_t tandem_iallreduce(const void* send, void* recv, size_t count,
                                             tandem_dtype_t dtype, tandem_op_t op, double prescale,
                                             double postscale, tandem_request_t* request) {
  return nonblocking(
      request,
      [&](Communicator& c) {
        check_reduce_args(c, send, recv, count, dtype, op, prescale, postscale);
      },
      [=](Communicator& c) { c.allreduce(send, recv, count, dtype, op, prescale, postscale); });
}

TANDEM_API tandem_result_t tandem_ibroadcast(void* buf, size_t count, tandem_dtype_t dtype,
                                             int root, tandem_request_t* request) {
  return nonblocking(
      request,
      [&](Communicator& c) {
        if (dtype_size(dtype) == 0)
          throw InvalidArgument("broadcast: unknown data type " + std::to_string(dtype));
        if (!buf && count > 0)
          throw InvalidArgument("broadcast: buf is NULL with count " + std::to_string(count));
        if (root < 0 || root >= c.identity().size)
          throw InvalidArgument("broadcast: root " + std::to_string(root) +
                                " is out of range; expected 0.." +
                                std::to_string(c.identity().size - 1));
      },
      [=](Communicator& c) { c.broadcast(buf, count, dtype, root); });
}

TANDEM_API tandem_result_t tandem_iallgather(const void* send, size_t count, void* recv,
                                             tandem_dtype_t dtype, tandem_request_t* request) {
  return nonblocking(
      request,
      [&](Communicator&) {
        if (dtype_size(dtype) == 0)
          throw InvalidArgument("allgather: unknown data type " + std::to_string(dtype));
        if (count > 0 && (!send || !recv))
          throw InvalidArgument("allgather: NULL buffer with count " + std::to_string(count));
      },
      [=](Communicator& c) { c.allgather(send, count, recv, dtype); });
}

TANDEM_API tandem_result_t tandem_test(tandem_request_t request) {
  if (!request) {
    set_last_error("tandem_test: request is NULL");
    return TANDEM_ERR_INVALID_ARGUMENT;
  }
  std::lock_guard<std::mutex> lock(request->mu);
  if (!request->done) return TANDEM_ERR_IN_PROGRESS;
  if (request->result != TANDEM_SUCCESS) set_last_error(request->error);
  return request->result;
}

TANDEM_API tandem_result_t tandem_wait(tandem_request_t request) {
  if (!request) {
    set_last_error("tandem_wait: request is NULL");
    return TANDEM_ERR_INVALID_ARGUMENT;
  }
  // Every collective ends (deadlines inside), so this wait does too.
  std::unique_lock<std::mutex> lock(request->mu);
  request->cv.wait(lock, [&] { return request->done; });
  if (request->result != TANDEM_SUCCESS) set_last_error(request->error);
  return request->result;
}

TANDEM_API void tandem_request_free(tandem_request_t request) {
  if (!request) return;
  tandem_wait(request);
  delete request;
}

TANDEM_API tandem_result_t tandem_alloc_shared(size_t bytes, void** ptr) {
  return guarded([&] {
    if (!ptr) throw InvalidArgument("tandem_alloc_shared: ptr is NULL");
    *ptr = nullptr;
    *ptr = current()->comm->allocate_shared(bytes);
  });
}

TANDEM_API tandem_result_t tandem_free_shared(void* ptr) {
  return guarded([&] {
    if (ptr) current()->comm->free_shared(ptr);
  });
}

}  // extern "C"
