#include "bootstrap/memory_bootstrap.h"

#include <algorithm>
#include <atomic>
#include <random>
#include <string>
#include <unistd.h>

#include "common/errors.h"

namespace tandem {
namespace {

// Unique per world so that concurrent tests never share shm names.
std::string make_job_id() {
  static std::atomic<unsigned> counter{0};
  std::random_device rd;
  return "mem" + std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" +
         std::to_string(rd() & 0xffffff);
}

}  // namespace

MemoryWorld::MemoryWorld(int size, std::vector<int> ranks_per_node)
    : size_(size), job_id_(make_job_id()), next_round_(size, 0) {
  if (size < 1)
    throw InvalidArgument("MemoryWorld: size must be >= 1, got " + std::to_string(size));
  if (ranks_per_node.empty()) ranks_per_node = {size};
  int total = 0;
  for (size_t n = 0; n < ranks_per_node.size(); ++n) {
    for (int i = 0; i < ranks_per_node[n]; ++i) node_of_rank_.push_back(static_cast<int>(n));
    total += ranks_per_node[n];
  }
  if (total != size)
    throw InvalidArgument("MemoryWorld: ranks_per_node adds up to " + std::to_string(total) +
                          ", expected the world size " + std::to_string(size));
}

std::shared_ptr<MemoryWorld> MemoryWorld::with_placement(const std::vector<int>& node_of_rank) {
  auto world =
      std::make_shared<MemoryWorld>(static_cast<int>(std::max<size_t>(1, node_of_rank.size())));
  if (node_of_rank.empty()) return world;
  const int nodes = *std::max_element(node_of_rank.begin(), node_of_rank.end()) + 1;
  std::vector<bool> used(static_cast<size_t>(std::max(nodes, 0)), false);
  for (int n : node_of_rank) {
    if (n < 0)
      throw InvalidArgument("MemoryWorld: node numbers must be >= 0, got " + std::to_string(n));
    used[static_cast<size_t>(n)] = true;
  }
  for (int n = 0; n < nodes; ++n)
    if (!used[static_cast<size_t>(n)])
      throw InvalidArgument("MemoryWorld: node " + std::to_string(n) +
                            " holds no rank; number nodes 0..k-1");
  world->node_of_rank_ = node_of_rank;
  return world;
}

Identity MemoryWorld::identity_of(int rank) const {
  Identity id;
  id.rank = rank;
  id.size = size_;
  id.node_of_rank = node_of_rank_;
  id.cross_rank = node_of_rank_[rank];
  id.cross_size = *std::max_element(node_of_rank_.begin(), node_of_rank_.end()) + 1;
  id.local_rank = 0;
  id.local_size = 0;
  for (int r = 0; r < size_; ++r) {
    if (node_of_rank_[r] != id.cross_rank) continue;
    if (r < rank) ++id.local_rank;
    ++id.local_size;
  }
  id.job_id = job_id_;
  return id;
}

std::vector<Bytes> MemoryWorld::allgather(int rank, const Bytes& mine,
                                          std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t round = next_round_[rank]++;
  auto& slots = rounds_[round];
  if (slots.empty()) slots.resize(size_);
  slots[rank] = {true, mine};
  cv_.notify_all();
  auto complete = [&] {
    for (auto& s : rounds_[round])
      if (!s.first) return false;
    return true;
  };
  if (!cv_.wait_for(lock, timeout, complete)) {
    std::string missing;
    for (int r = 0; r < size_; ++r)
      if (!rounds_[round][r].first) missing += (missing.empty() ? "" : ",") + std::to_string(r);
    throw TimeoutError("bootstrap allgather: ranks " + missing + " did not arrive within " +
                       std::to_string(timeout.count()) + " ms");
  }
  std::vector<Bytes> out;
  for (auto& s : rounds_[round]) out.push_back(s.second);
  if (++taken_[round] == size_) {
    rounds_.erase(round);
    taken_.erase(round);
  }
  return out;
}

MemoryBootstrap::MemoryBootstrap(std::shared_ptr<MemoryWorld> world, int rank)
    : world_(std::move(world)), identity_(world_->identity_of(rank)) {}

std::vector<Bytes> MemoryBootstrap::allgather(const Bytes& mine,
                                              std::chrono::milliseconds timeout) {
  return world_->allgather(identity_.rank, mine, timeout);
}

}  // namespace tandem
