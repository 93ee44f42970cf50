// The C API's process-wide state, all of it in one place: the engine that
// tandem_init made (the C API's Communicator and its worker thread) and the
// runtime started with it. Every C call copies what it uses out of here
// under `mu`, as a shared_ptr it holds for the call, so that tandem_finalize
// can take both out while calls are still in flight (they end soon: a wait
// ends when the runtime fails its handles). Only api/ reaches it.
//
// The engine's other process-wide state, each for a reason of its own, is
// listed in docs/overview.md: the log (common/log.cc), the settings notes
// (common/settings.cc), the rendezvous stores rank 0 hosts
// (bootstrap/tcp_bootstrap.cc) and the PMIx session
// (bootstrap/pmix_bootstrap.cc); thread-local are each thread's last error
// and device stream.
#pragma once

#include <memory>
#include <mutex>

#include "api/worker.h"
#include "communicator/communicator.h"
#include "runtime/runtime.h"

namespace tandem::api {

struct Engine {
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<Worker> worker;  // destroyed first: drains before comm goes
  ~Engine() { worker.reset(); }
};

struct State {
  std::mutex mu;
  std::shared_ptr<Engine> engine;             // null: not initialized
  std::shared_ptr<runtime::Runtime> runtime;  // null: not running
};

// Defined in state.cc: a plain global (a function-local static would add
// an initialization guard to the path of every collective).
extern State state;

}  // namespace tandem::api
