// A job made of some ranks of another one: the bootstrap under the
// Communicators that the runtime builds for itself and for its process sets.
//
// It borrows a collective that every rank of the parent job already shares
// (the parent bootstrap's allgather at init, the runtime's own world
// Communicator later) and so only works while every parent rank takes part
// in each round: members through this class, the other ranks through
// take_part_as_outsider(), which answers rounds until the members call
// finish(). Members run the same deterministic sequence of collectives (a
// Communicator's constructor), so they all send "finished" in the same round
// and the outsiders stop there. After finish() the bootstrap refuses to be
// used, so a Communicator over it must connect everything in its
// constructor (CommunicatorOptions::connect_world_at_start).
//
// Each round costs one parent allgather of the members' blobs plus a one-byte
// tag per rank.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace tandem {

class SubsetBootstrap : public Bootstrap {
 public:
  // An allgather over every rank of the parent job, indexed by parent rank.
  using ParentAllgather =
      std::function<std::vector<Bytes>(const Bytes&, std::chrono::milliseconds)>;

  // members: parent ranks, ascending, including this one. job_id must differ
  // from the parent's and from every other subset's (it names shm segments).
  SubsetBootstrap(const Identity& parent, std::vector<int> members, std::string job_id,
                  ParentAllgather parent_allgather);

  const Identity& identity() const override { return id_; }
  std::vector<Bytes> allgather(const Bytes& mine, std::chrono::milliseconds timeout) override;

  // Collective over the members: lets the outsiders go. Later use throws.
  void finish(std::chrono::milliseconds timeout);

  // Called by every parent rank that is not a member, while the members use
  // their SubsetBootstrap; returns once they have called finish().
  static void take_part_as_outsider(const ParentAllgather& parent_allgather,
                                    std::chrono::milliseconds timeout);

  // The identity a member gets: ranks renumbered in member order, nodes in
  // the order of their lowest member (as identity_from_nodes does).
  static Identity subset_identity(const Identity& parent, const std::vector<int>& members,
                                  const std::string& job_id);

 private:
  Identity id_;
  std::vector<int> members_;
  ParentAllgather parent_;
  bool finished_ = false;
};

}  // namespace tandem
