// Building an Identity from what every rank reports about its node. Shared by
// the bootstraps that learn node membership by exchange (TCP store) rather
// than from the launcher.
#pragma once

#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace tandem {

// node_key[r] names rank r's node (a hostname, a PMIx node id...). Nodes are
// numbered in the order of their lowest rank, so every rank computes the same
// numbering and rank 0 is always on node 0; local ranks follow rank order
// within a node.
Identity identity_from_nodes(int rank, const std::vector<std::string>& node_key,
                             std::string job_id);

// A fresh random job id ("<prefix>-<16 hex digits>"), safe in shm names.
std::string random_job_id(const std::string& prefix);

// Whether s is usable as a job id: 1-64 of [A-Za-z0-9._-].
bool valid_job_id(const std::string& s);

}  // namespace tandem
