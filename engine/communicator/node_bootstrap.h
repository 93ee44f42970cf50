// A Bootstrap whose rounds run over a node's shared memory (ShmGroup), for
// a Communicator whose ranks all share one node and that must make a
// transport after its own bootstrap has stopped answering: the runtime's
// Communicators are built over bootstraps that work only during their
// construction (bootstrap/subset_bootstrap.h), yet Adasum needs a
// point-to-point transport joining every rank, made on its first use.
// Every rank of the group must call each round, in the same order, as for
// any collective of the ShmGroup.
#pragma once

#include <memory>

#include "bootstrap/bootstrap.h"
#include "shm/shm_group.h"

namespace tandem {

// `id` is the Communicator's identity (one node: local rank == rank).
std::unique_ptr<Bootstrap> make_node_bootstrap(const Identity& id, ShmGroup& shm);

}  // namespace tandem
