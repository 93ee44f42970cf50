// Who forms the next generation, from the candidates and what their probes
// found. Pure (no I/O), so that every rule is a unit test.
//
// Candidates come in priority order: the members of the last generation in
// their old rank order, then new processes in the order they asked to join.
// Nodes are taken in the order of their first candidate; a node is kept when
// every probe between it and every node kept before it succeeded (in either
// direction), otherwise it is excluded, as Horovod blacklists a host. So
// rank 0's node is kept first and a node cut off from it goes; with a link
// cut between two nodes, the one holding the lower old ranks stays. A
// candidate that sent no probe report (stopped, cut off) takes its node out.
// Kept candidates keep their order (old ranks keep the low numbers); past
// max_size the last ones wait for a later generation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tandem {
namespace elastic {

struct Candidate {
  uint32_t member = 0;
  std::string node;
};

struct Selection {
  std::vector<uint32_t> kept;               // in rank order
  std::vector<uint32_t> deferred;           // kept nodes' members past max_size
  std::vector<std::string> excluded_nodes;  // in candidate order
};

// unreachable: (a, b) when member a could not connect to member b.
// silent: candidates that sent no report.
Selection select_members(const std::vector<Candidate>& candidates,
                         const std::vector<std::pair<uint32_t, uint32_t>>& unreachable,
                         const std::set<uint32_t>& silent, size_t max_size);

// The candidate each candidate probes: the first one of every other node.
std::vector<uint32_t> probe_targets(const std::vector<Candidate>& candidates, uint32_t member);

}  // namespace elastic
}  // namespace tandem
