// Getting one NCCL unique id to every member of a process set, through the
// bootstrap (PMIx under srun, the TCP store otherwise), without MPI.
//
// The exchange is a collective over every rank of the bootstrap's world, as
// Bootstrap's broadcast is: it runs when a process set is added (Horovod's
// add_process_set is called by all ranks), not when its first GPU tensor
// arrives, because non-members never run that set's operations and could not
// take part later. The communicator itself, the expensive part that needs the
// GPU, is created lazily by the members (communicator_cache.h).
//
// The first member of the set (lowest world rank) creates the id. The blob it
// broadcasts carries the set id and a status, so a root whose ncclGetUniqueId
// fails tells the members why at once instead of letting them time out.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace tandem {
namespace gpu {

constexpr size_t kUniqueIdBytes = 128;  // sizeof(ncclUniqueId), fixed by NCCL's ABI
using UniqueId = std::array<uint8_t, kUniqueIdBytes>;

// Where ids come from: ncclGetUniqueId in the GPU path (NcclUniqueIdSource),
// a counter in tests. Throws on failure.
class UniqueIdSource {
 public:
  virtual ~UniqueIdSource() = default;
  virtual UniqueId create() = 0;
};

// Collective over the whole world. members: world ranks of the set, any
// order, no duplicates. Returns the id on members, nullopt on the others.
// Throws TimeoutError when the id does not arrive in time (naming the rank
// that should have sent it), DeviceError/BootstrapError when the root could
// not create it, MismatchError when ranks disagree on the set.
std::optional<UniqueId> exchange_unique_id(Bootstrap& bootstrap, int set_id,
                                           std::vector<int> members, UniqueIdSource& source,
                                           std::chrono::milliseconds timeout);

}  // namespace gpu
}  // namespace tandem
