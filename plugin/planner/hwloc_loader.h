// Reads a node's topology with hwloc, live or from an XML file, and extracts
// the planner's model (topology.h). The hwloc handle is kept (RAII) because
// applying a plan with memory binding needs it.
#pragma once

#include <memory>
#include <string>

#include "topology.h"

struct hwloc_topology;

namespace tandem::planner {

class LoadedTopology {
 public:
  // The live machine, with I/O devices (hwloc's "important" filter).
  static LoadedTopology live();
  // An hwloc XML file (lstopo --of xml). It is taken to describe this machine
  // (HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM) so that binding from it works.
  // Throws TopologyError when the file is missing or not hwloc XML.
  static LoadedTopology from_xml(const std::string& path);

  // The live machine for several processes to share: loaded once (by
  // slurmstepd, before it forks a node's tasks) with the resources this
  // process may not use kept in (HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED), so
  // that each task can cut it to its own cgroup with for_this_process().
  static LoadedTopology live_shared();
  // A copy of a live_shared() topology as live() would have read it in this
  // process: allowed CPUs and NUMA nodes re-read from this process's cgroup
  // (hwloc_topology_allow with local restrictions, a few file reads, no
  // discovery) and the others removed.
  LoadedTopology for_this_process() const;

  const Topology& model() const { return model_; }
  hwloc_topology* handle() const { return handle_.get(); }

 private:
  struct Closer {
    void operator()(hwloc_topology* t) const;
  };
  LoadedTopology(std::unique_ptr<hwloc_topology, Closer> handle, std::string source);

  std::unique_ptr<hwloc_topology, Closer> handle_;
  Topology model_;
};

}  // namespace tandem::planner
