#include "bootstrap/subset_bootstrap.h"

#include <algorithm>

#include "bootstrap/identity.h"
#include "common/errors.h"

namespace tandem {
namespace {

// First byte of every blob in a parent round.
constexpr uint8_t kOutsider = 0;
constexpr uint8_t kMember = 1;
constexpr uint8_t kFinished = 2;

}  // namespace

Identity SubsetBootstrap::subset_identity(const Identity& parent, const std::vector<int>& members,
                                          const std::string& job_id) {
  auto me = std::find(members.begin(), members.end(), parent.rank);
  if (me == members.end())
    throw InvalidArgument("subset bootstrap: rank " + std::to_string(parent.rank) +
                          " is not one of the members");
  std::vector<std::string> node_key;
  for (int r : members) {
    if (r < 0 || r >= parent.size)
      throw InvalidArgument("subset bootstrap: member " + std::to_string(r) +
                            " is outside the job's ranks 0.." + std::to_string(parent.size - 1));
    const int node = parent.node_of_rank.empty() ? 0 : parent.node_of_rank.at(r);
    node_key.push_back(std::to_string(node));
  }
  return identity_from_nodes(static_cast<int>(me - members.begin()), node_key, job_id);
}

SubsetBootstrap::SubsetBootstrap(const Identity& parent, std::vector<int> members,
                                 std::string job_id, ParentAllgather parent_allgather)
    : id_(subset_identity(parent, members, job_id)),
      members_(std::move(members)),
      parent_(std::move(parent_allgather)) {
  if (!std::is_sorted(members_.begin(), members_.end()) ||
      std::adjacent_find(members_.begin(), members_.end()) != members_.end())
    throw InvalidArgument("subset bootstrap: members must be ascending without repeats");
}

std::vector<Bytes> SubsetBootstrap::allgather(const Bytes& mine,
                                              std::chrono::milliseconds timeout) {
  if (finished_)
    throw Error(
        "the bootstrap of a process set was used after its Communicator was built; "
        "it only works while every rank of the job takes part (a bug in Tandem)");
  // Sized once and filled, as PmixBootstrap::allgather's frame (gcc 14).
  Bytes tagged(mine.size() + 1);
  tagged[0] = kMember;
  std::copy(mine.begin(), mine.end(), tagged.begin() + 1);
  std::vector<Bytes> all = parent_(tagged, timeout);
  std::vector<Bytes> out;
  out.reserve(members_.size());
  for (int r : members_) {
    const Bytes& b = all.at(static_cast<size_t>(r));
    if (b.empty() || b[0] != kMember)
      throw BootstrapError("process-set bootstrap: rank " + std::to_string(r) +
                           " is a member but did not take part in this round as one; every rank "
                           "must create the same process sets in the same order");
    out.emplace_back(b.begin() + 1, b.end());
  }
  return out;
}

void SubsetBootstrap::finish(std::chrono::milliseconds timeout) {
  if (finished_) return;
  parent_(Bytes{kFinished}, timeout);
  finished_ = true;
}

void SubsetBootstrap::take_part_as_outsider(const ParentAllgather& parent_allgather,
                                            std::chrono::milliseconds timeout) {
  for (;;) {
    std::vector<Bytes> all = parent_allgather(Bytes{kOutsider}, timeout);
    bool finished = false, members_seen = false;
    for (const Bytes& b : all) {
      if (b.empty()) continue;
      finished = finished || b[0] == kFinished;
      members_seen = members_seen || b[0] != kOutsider;
    }
    if (finished) return;
    if (!members_seen)
      throw BootstrapError(
          "process-set bootstrap: a round with no member in it; every rank "
          "must create the same process sets in the same order");
  }
}

}  // namespace tandem
