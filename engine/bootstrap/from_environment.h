// Picks the bootstrap a process was launched with (see tandem_init in
// include/tandem/tandem.h): PMIx under srun, the TCP store under tandem-run
// and other launchers that set TANDEM_RENDEZVOUS_ADDR/TANDEM_RANK/TANDEM_SIZE,
// else a world of one. Throws BootstrapError with an actionable message.
#pragma once

#include <memory>
#include <string>

#include "bootstrap/bootstrap.h"

namespace tandem {

std::unique_ptr<Bootstrap> bootstrap_from_environment();

// Why the last bootstrap_from_environment() in this process did not use the
// PMIx its launcher offered (no loadable libpmix, no server reachable), or
// empty: it used PMIx, or was not offered any.
std::string& pmix_unusable_reason();

}  // namespace tandem
