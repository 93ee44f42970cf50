// Errors raised by the planner. The planner has no Slurm or engine dependency
// (the plugin and tandem-bind both link it), so it carries its own two types;
// callers turn them into one user-facing message each.
#pragma once

#include <stdexcept>
#include <string>

namespace tandem::planner {

// The topology could not be read (missing/unreadable XML, hwloc failure).
class TopologyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The request does not fit the topology or is malformed (a GPU index the node
// does not have, a bad CPU list, an unknown policy value).
class PlanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tandem::planner
