// Ranks as threads of one process: the bootstrap of the unit tests. A
// MemoryWorld is shared by the threads; each makes its MemoryBootstrap from it.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>

#include "bootstrap/bootstrap.h"

namespace tandem {

class MemoryWorld {
 public:
  // ranks_per_node lists how many ranks each node has, e.g. {3, 1}: ranks are
  // placed on nodes in block order. Empty means one node holding every rank.
  explicit MemoryWorld(int size, std::vector<int> ranks_per_node = {});
  // Any placement: node_of_rank[r] is rank r's node, e.g. {0, 1, 0, 1} for a
  // cyclic one (srun -m cyclic). Nodes are numbered 0..k-1, each used.
  static std::shared_ptr<MemoryWorld> with_placement(const std::vector<int>& node_of_rank);
  int size() const { return size_; }
  Identity identity_of(int rank) const;
  std::vector<Bytes> allgather(int rank, const Bytes& mine, std::chrono::milliseconds timeout);

 private:
  int size_;
  std::vector<int> node_of_rank_;
  std::string job_id_;
  std::mutex mu_;
  std::condition_variable cv_;
  // Round r's contributions; every rank calls allgather in the same order.
  std::map<uint64_t, std::vector<std::pair<bool, Bytes>>> rounds_;
  std::map<uint64_t, int> taken_;
  std::vector<uint64_t> next_round_;
};

class MemoryBootstrap : public Bootstrap {
 public:
  MemoryBootstrap(std::shared_ptr<MemoryWorld> world, int rank);
  const Identity& identity() const override { return identity_; }
  std::vector<Bytes> allgather(const Bytes& mine, std::chrono::milliseconds timeout) override;

 private:
  std::shared_ptr<MemoryWorld> world_;
  Identity identity_;
};

}  // namespace tandem
