// The bootstrap under srun --mpi=pmix (or any PMIx launcher, e.g. Open MPI's
// mpirun): identity from the PMIx job data, blob exchange with
// Put/Commit/Fence(collect)/Get, barrier with a Fence without data.
#pragma once

#include <memory>

#include "bootstrap/bootstrap.h"

namespace tandem {

// Joins through PMIx (PMIx_Init here, PMIx_Finalize when the bootstrap goes
// away). Throws BootstrapError when no PMIx server can be reached.
std::unique_ptr<Bootstrap> make_pmix_bootstrap(std::chrono::milliseconds timeout);

}  // namespace tandem
