// The bootstrap under srun --mpi=pmix (or any PMIx launcher, e.g. Open MPI's
// mpirun): identity from the PMIx job data, blob exchange with
// Put/Commit/Fence(collect)/Get, barrier with a Fence without data.
#pragma once

#include <memory>

#include "bootstrap/bootstrap.h"
#include "common/errors.h"

namespace tandem {

// PMIx_Init found no server: the launcher's PMIx server directory or socket
// is not visible here (a container that does not see slurmd's spool).
class PmixInitError : public BootstrapError {
 public:
  using BootstrapError::BootstrapError;
};

// Joins through PMIx (PMIx_Init here, PMIx_Finalize when the bootstrap goes
// away). Throws BootstrapError when no PMIx server can be reached.
std::unique_ptr<Bootstrap> make_pmix_bootstrap(std::chrono::milliseconds timeout);

}  // namespace tandem
