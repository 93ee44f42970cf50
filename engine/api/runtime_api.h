// The runtime in the C API (its slot is in api/state.h). tandem_init makes
// it once the world's data path exists (wrapping its Communicator in a
// DataPath); tandem_finalize uninstalls it (destroying it) before the data
// path goes. Until then every runtime call returns TANDEM_ERR_NOT_INITIALIZED.
#pragma once

#include <memory>

#include "communicator/communicator.h"
#include "runtime/runtime.h"

namespace tandem::api {

// Tests install a runtime of their own; tandem_init sets the slot directly.
void install_runtime(std::unique_ptr<runtime::Runtime> rt);
// Takes the runtime out of the slot, stops it and waits for the calls still
// using it (tandem_finalize).
void uninstall_runtime();

// Called by tandem_init once `world` (the C API's Communicator) exists, on
// every rank, before anything else uses it: reads the runtime's settings,
// builds its own Communicators (runtime/communicator_data_path.h) and starts
// the "tandem-runtime" thread. Throws (init fails) on a bad setting.
std::unique_ptr<runtime::Runtime> make_runtime(Communicator& world);

}  // namespace tandem::api
