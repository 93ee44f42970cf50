// Picks the bootstrap a process was launched with (see tandem_init in
// include/tandem/tandem.h): PMIx under srun, the TCP store under tandem-run
// and other launchers that set TANDEM_RENDEZVOUS_ADDR/TANDEM_RANK/TANDEM_SIZE,
// else a world of one. Throws BootstrapError with an actionable message.
#pragma once

#include <memory>

#include "bootstrap/bootstrap.h"

namespace tandem {

std::unique_ptr<Bootstrap> bootstrap_from_environment();

}  // namespace tandem
