#include "apply.h"

#include <hwloc.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "errors.h"

namespace tandem::planner {

namespace {

struct BitmapFree {
  void operator()(hwloc_bitmap_s* b) const { hwloc_bitmap_free(b); }
};
using Bitmap = std::unique_ptr<hwloc_bitmap_s, BitmapFree>;

void bind_cpus(const CpuSet& cpus) {
  // sched_setaffinity rather than hwloc_set_cpubind: it needs no topology and
  // reports CPUs that do not exist here as EINVAL, which we turn into advice.
  cpu_set_t mask;
  CPU_ZERO(&mask);
  for (int cpu : cpus.cpus()) {
    if (cpu >= CPU_SETSIZE)
      throw PlanError("planned CPU " + std::to_string(cpu) + " is beyond CPU_SETSIZE");
    CPU_SET(cpu, &mask);
  }
  if (sched_setaffinity(0, sizeof mask, &mask) != 0) {
    int err = errno;
    throw PlanError("could not bind to CPUs " + cpus.to_string() + ": " + std::strerror(err) +
                    (err == EINVAL
                         ? " (none of them is online here: does the topology describe this node?)"
                         : ""));
  }
}

void bind_memory(hwloc_topology_t topo, int numa) {
  Bitmap nodes(hwloc_bitmap_alloc());
  if (!nodes) throw PlanError("out of memory while binding memory");
  hwloc_bitmap_only(nodes.get(), static_cast<unsigned>(numa));
  if (hwloc_set_membind(topo, nodes.get(), HWLOC_MEMBIND_BIND,
                        HWLOC_MEMBIND_PROCESS | HWLOC_MEMBIND_BYNODESET) != 0) {
    throw PlanError("could not bind memory to NUMA node " + std::to_string(numa) + ": " +
                    std::strerror(errno) + "; set membind=off to run without memory binding");
  }
}

}  // namespace

void apply_binding(const LoadedTopology& topology, const TaskPlan& plan) {
  if (plan.cpu_source == Source::Planner && !plan.cpus.empty()) bind_cpus(plan.cpus);
  if (plan.membind && plan.numa >= 0) bind_memory(topology.handle(), plan.numa);
}

}  // namespace tandem::planner
