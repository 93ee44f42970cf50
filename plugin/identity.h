// Who a task is, in Horovod's terms, computed from what Slurm tells the task.
//
// Horovod (runner/common/util/hosts.py) defines, for a task with local rank L
// on node n: cross_size = the number of nodes that run a task with local rank
// L, cross_rank = how many of those come before n. With the same number of
// tasks on every node that is simply the node index and the node count; with
// uneven tasks per node (srun -N 2 -n 3) the third task on node 0 has
// cross_size 1. Ranks are Slurm's global task ids, so block, cyclic and plane
// distributions need no special case; only the per-node task counts matter.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::plugin {

struct StepLayout {
  uint32_t size = 0;                     // tasks in the step
  uint32_t node_id = 0;                  // this node's index among the step's nodes
  uint32_t nnodes = 0;                   // nodes in the step
  std::vector<uint32_t> tasks_per_node;  // indexed by node id
};

struct TaskIdentity {
  uint32_t rank = 0;
  uint32_t size = 0;
  uint32_t local_rank = 0;
  uint32_t local_size = 0;
  uint32_t cross_rank = 0;
  uint32_t cross_size = 0;
  uint32_t node_id = 0;
  uint32_t nnodes = 0;
  std::string hostname;
};

// Parses Slurm's compressed per-node task counts ("2(x3),1" -> 2,2,2,1), as in
// SLURM_STEP_TASKS_PER_NODE. Throws PluginError on anything else.
std::vector<uint32_t> parse_tasks_per_node(std::string_view text);

// Checks the layout is consistent (counts per node match the node count and
// add up to the size, local_rank fits) and computes the identity. Throws
// PluginError naming the inconsistency.
TaskIdentity compute_identity(const StepLayout& layout, uint32_t rank, uint32_t local_rank,
                              std::string hostname);

}  // namespace tandem::plugin
