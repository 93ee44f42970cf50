// The bootstrap layer: who am I, who are my peers, and a way to exchange small
// blobs. Concrete bootstraps: MemoryBootstrap (ranks as threads, for unit
// tests), the TCP store (tandem-run and other launchers) and PMIx (srun).
// Everything above this layer sees only this interface.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tandem {

using Bytes = std::vector<uint8_t>;

// Who this process is in the job.
struct Identity {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;             // index of this rank's node
  int cross_size = 1;             // number of nodes
  std::vector<int> node_of_rank;  // node index of every rank (size entries)
  std::string job_id;             // unique per job and step; names shm segments
};

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual const Identity& identity() const = 0;
  // Collective: every rank contributes one blob and receives all of them,
  // indexed by rank. Throws TimeoutError (naming the missing ranks where
  // known) when not every rank arrives before the timeout.
  virtual std::vector<Bytes> allgather(const Bytes& mine, std::chrono::milliseconds timeout) = 0;
  // Collective: returns root's blob on every rank.
  virtual Bytes broadcast(const Bytes& value, int root, std::chrono::milliseconds timeout);
  virtual void barrier(std::chrono::milliseconds timeout);
};

}  // namespace tandem
