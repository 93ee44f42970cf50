#include "gpu/communicator_cache.h"

#include <algorithm>

#include "common/errors.h"

namespace tandem {
namespace gpu {

void CommunicatorCache::add(int set_id, std::vector<int> members, int my_rank, const UniqueId& id) {
  std::sort(members.begin(), members.end());
  const auto it = std::find(members.begin(), members.end(), my_rank);
  if (it == members.end())
    throw InvalidArgument("process set " + std::to_string(set_id) + ": rank " +
                          std::to_string(my_rank) + " is not a member and gets no communicator");
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.count(set_id) != 0)
    throw InvalidArgument("process set " + std::to_string(set_id) +
                          " already has a communicator; remove it before adding it again");
  if (!used_ids_.insert(id).second)
    throw InvalidArgument("process set " + std::to_string(set_id) +
                          ": this NCCL unique id was already used by another communicator; ids "
                          "are single use (a bug in the id source)");
  Entry e;
  e.spec.set_id = set_id;
  e.spec.index = static_cast<int>(it - members.begin());
  e.spec.members = std::move(members);
  e.spec.id = id;
  entries_.emplace(set_id, std::move(e));
}

void CommunicatorCache::remove(int set_id) {
  std::shared_ptr<DeviceComm> doomed;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(set_id);
  if (it == entries_.end()) return;
  doomed = std::move(it->second.comm);
  entries_.erase(it);
}

std::shared_ptr<DeviceComm> CommunicatorCache::get(int set_id) {
  CommSpec spec;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(set_id);
    if (it == entries_.end())
      throw InvalidArgument("GPU operation on process set " + std::to_string(set_id) +
                            ", which this rank has no communicator for (not a member, or the set "
                            "was never added)");
    if (it->second.failure) std::rethrow_exception(it->second.failure);
    if (it->second.comm) return it->second.comm;
    if (aborted_) std::rethrow_exception(aborted_);
    spec = it->second.spec;
  }
  // Created without the lock: NCCL init takes seconds, and abort_all() must
  // stay callable meanwhile (the factory's own deadline bounds the wait).
  std::shared_ptr<DeviceComm> comm;
  std::exception_ptr failure;
  try {
    comm = factory_(spec);
  } catch (...) { failure = std::current_exception(); }
  std::lock_guard<std::mutex> lock(mu_);
  ++creations_;
  auto it = entries_.find(set_id);
  if (failure) {
    if (it != entries_.end()) it->second.failure = failure;
    std::rethrow_exception(failure);
  }
  if (aborted_) {  // a peer was lost while we were connecting
    comm->abort("aborted during creation");
    if (it != entries_.end()) it->second.failure = aborted_;
    std::rethrow_exception(aborted_);
  }
  if (it != entries_.end()) it->second.comm = comm;
  return comm;
}

void CommunicatorCache::abort_all(const std::string& reason) {
  std::vector<std::shared_ptr<DeviceComm>> live;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto err = std::make_exception_ptr(PeerLostError(reason));
    if (!aborted_) aborted_ = err;
    for (auto& kv : entries_) {
      if (kv.second.comm) live.push_back(kv.second.comm);
      if (!kv.second.failure) kv.second.failure = err;
    }
  }
  for (auto& c : live) c->abort(reason);
}

int CommunicatorCache::creations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return creations_;
}

}  // namespace gpu
}  // namespace tandem
