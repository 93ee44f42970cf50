// The runtime's slot in the C API. tandem_init installs the runtime once
// the world's data path exists (wrapping its Communicator in a DataPath);
// tandem_finalize uninstalls it (destroying it) before the data path goes.
// Until installed, every runtime call returns TANDEM_ERR_NOT_INITIALIZED.
#pragma once

#include <memory>

#include "runtime/runtime.h"

namespace tandem::api {

void install_runtime(std::unique_ptr<runtime::Runtime> rt);
void uninstall_runtime();

}  // namespace tandem::api
