// Steps of the planner shared between its translation units. Not part of the
// planner's interface: use planner.h.
#pragma once

#include <vector>

#include "planner.h"

namespace tandem::planner::detail {

// Block distribution: which of `bins` bins item `item` of `items` falls in,
// the first items % bins bins holding one item more (Slurm's block layout).
int block_owner(int item, int items, int bins);
// The items [first, first+count) that bin `bin` holds in that layout.
std::pair<int, int> block_range(int bin, int items, int bins);

// CPUs for each task. home[t] is the NUMA domain (index into topology.numa)
// the task should run in, or -1 for "spread with the tasks that have no GPU".
// Fills cpus and numa of every task; adds a warning when a domain had to be
// replaced by the nearest one with usable CPUs.
void assign_cpus(const Topology& topology, const CpuSet& usable, const std::vector<int>& home,
                 std::vector<TaskPlan>& tasks, std::vector<std::string>& warnings);

// The NIC and the TCP interface for each task; anchor_gpu[t] is the index
// into topology.gpus of the task's first GPU, or -1 (then its NUMA domain
// anchors it).
void assign_nics(const Topology& topology, const Policy& policy, const std::vector<int>& anchor_gpu,
                 std::vector<TaskPlan>& tasks, std::vector<std::string>& warnings);

// The node-wide NCCL filter from the NICs the tasks were given.
std::optional<EnvVar> nccl_filter(const std::vector<TaskPlan>& tasks);

}  // namespace tandem::planner::detail
