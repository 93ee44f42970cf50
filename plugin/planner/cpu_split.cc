// CPU placement. Each task runs in one NUMA domain: the one of its GPU, or,
// without GPUs, one of the domains the step has CPUs in, tasks spread over
// them in blocks. The usable cores of a domain are split between the tasks
// placed there in local id order:
//   - at least as many cores as tasks: each task gets whole cores (all their
//     hardware threads), in blocks, the first tasks one core more;
//   - fewer cores than tasks: hardware threads are split instead, core by
//     core, so SMT siblings are separated only when there is no other way;
//   - fewer threads than tasks: tasks share threads, again in blocks.
#include <algorithm>
#include <cstdlib>
#include <map>

#include "detail.h"
#include "errors.h"

namespace tandem::planner::detail {

namespace {

std::vector<CpuSet> usable_cores(const NumaDomain& domain, const CpuSet& usable) {
  std::vector<CpuSet> cores;
  for (const CpuSet& core : domain.cores) {
    CpuSet left = core.intersect(usable);
    if (!left.empty()) cores.push_back(std::move(left));
  }
  return cores;
}

// The domain with usable CPUs nearest to `wanted`: same package first, then
// the closest in hwloc's logical order (neighbours in that order are usually
// neighbours on the interconnect).
int nearest_with_cpus(const Topology& topology, const std::vector<bool>& has_cpus, int wanted) {
  int best = -1;
  auto key = [&](int d) {
    int other_package = topology.numa[d].package == topology.numa[wanted].package ? 0 : 1;
    return std::make_pair(other_package, std::abs(d - wanted));
  };
  for (int d = 0; d < static_cast<int>(topology.numa.size()); ++d) {
    if (has_cpus[d] && (best < 0 || key(d) < key(best))) best = d;
  }
  return best;
}

std::vector<CpuSet> split(const std::vector<CpuSet>& cores, int tasks) {
  std::vector<CpuSet> out(tasks);
  int ncores = static_cast<int>(cores.size());
  if (ncores >= tasks) {
    for (int t = 0; t < tasks; ++t) {
      auto [first, count] = block_range(t, ncores, tasks);
      for (int c = first; c < first + count; ++c) out[t] = out[t].unite(cores[c]);
    }
    return out;
  }
  std::vector<int> threads;
  for (const CpuSet& core : cores)
    threads.insert(threads.end(), core.cpus().begin(), core.cpus().end());
  int nthreads = static_cast<int>(threads.size());
  for (int t = 0; t < tasks; ++t) {
    if (nthreads >= tasks) {
      auto [first, count] = block_range(t, nthreads, tasks);
      out[t] = CpuSet(std::vector<int>(threads.begin() + first, threads.begin() + first + count));
    } else {
      out[t] = CpuSet({threads[block_owner(t, tasks, nthreads)]});
    }
  }
  return out;
}

}  // namespace

void assign_cpus(const Topology& topology, const CpuSet& usable, const std::vector<int>& home,
                 std::vector<TaskPlan>& tasks, std::vector<std::string>& warnings) {
  int ndomains = static_cast<int>(topology.numa.size());
  std::vector<bool> has_cpus(ndomains);
  std::vector<int> with_cpus;
  for (int d = 0; d < ndomains; ++d) {
    has_cpus[d] = !usable_cores(topology.numa[d], usable).empty();
    if (has_cpus[d]) with_cpus.push_back(d);
  }
  if (with_cpus.empty()) {
    throw PlanError("none of the usable CPUs (" +
                    (usable.empty() ? std::string("none") : usable.to_string()) +
                    ") are in the topology (" + topology.source +
                    "): check that the topology describes this node");
  }

  // Tasks without a GPU location are spread over the domains with CPUs.
  std::vector<int> spread;
  for (size_t t = 0; t < tasks.size(); ++t)
    if (home[t] < 0) spread.push_back(static_cast<int>(t));
  std::map<int, std::vector<int>> by_domain;  // domain -> tasks, in local id order
  for (size_t t = 0; t < tasks.size(); ++t) {
    int domain = home[t];
    if (domain < 0) {
      int rank = static_cast<int>(std::find(spread.begin(), spread.end(), t) - spread.begin());
      domain = with_cpus[block_owner(rank, static_cast<int>(spread.size()),
                                     static_cast<int>(with_cpus.size()))];
    } else if (!has_cpus[domain]) {
      int nearest = nearest_with_cpus(topology, has_cpus, domain);
      warnings.push_back("task " + std::to_string(t) + ": NUMA domain " +
                         std::to_string(topology.numa[domain].os_index) +
                         " of its GPU has none of the step's CPUs; using NUMA domain " +
                         std::to_string(topology.numa[nearest].os_index));
      domain = nearest;
    }
    by_domain[domain].push_back(static_cast<int>(t));
  }
  for (const auto& [domain, members] : by_domain) {
    std::vector<CpuSet> parts =
        split(usable_cores(topology.numa[domain], usable), static_cast<int>(members.size()));
    for (size_t i = 0; i < members.size(); ++i) {
      TaskPlan& task = tasks[members[i]];
      task.cpus = parts[i];
      task.numa = topology.numa[domain].os_index;
      task.cpu_source = Source::Planner;
    }
  }
}

}  // namespace tandem::planner::detail
