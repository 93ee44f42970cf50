// The runtime's slot in the C API. tandem_init installs the runtime once
// the world's data path exists (wrapping its Communicator in a DataPath);
// tandem_finalize uninstalls it (destroying it) before the data path goes.
// Until installed, every runtime call returns TANDEM_ERR_NOT_INITIALIZED.
#pragma once

#include <memory>

#include "communicator/communicator.h"
#include "runtime/runtime.h"

namespace tandem::api {

void install_runtime(std::unique_ptr<runtime::Runtime> rt);
void uninstall_runtime();

// Called by tandem_init once `world` (the C API's Communicator) exists, on
// every rank, before anything else uses it: reads the runtime's settings,
// builds its own Communicators (runtime/communicator_data_path.h) and starts
// the "tandem-runtime" thread. Throws (init fails) on a bad setting.
void start_runtime(Communicator& world);

}  // namespace tandem::api
