#include "bootstrap/bootstrap.h"

namespace tandem {

// Defaults in terms of allgather; a bootstrap with a cheaper native form
// (PMIx fence for barrier) overrides them.
Bytes Bootstrap::broadcast(const Bytes& value, int root, std::chrono::milliseconds timeout) {
  const bool is_root = identity().rank == root;
  auto all = allgather(is_root ? value : Bytes{}, timeout);
  return all.at(root);
}

void Bootstrap::barrier(std::chrono::milliseconds timeout) { allgather(Bytes{}, timeout); }

}  // namespace tandem
