// The binding planner: pure functions from (topology model, request) to a
// plan for every local task of a node. No hwloc, no Slurm, no system calls
// here; loading the model is hwloc_loader.h and applying a plan is apply.h.
//
// Every task of a node computes the same node plan and takes its own entry,
// so node-wide choices (the NCCL filter, how a NUMA domain's cores are split)
// agree between tasks without any communication.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cpu_set.h"
#include "policy.h"
#include "topology.h"

namespace tandem::planner {

// Bindings the user asked Slurm for explicitly. The planner keeps them and
// plans the rest around them.
struct UserBinding {
  bool cpus = false;  // --cpu-bind=map_cpu/mask_cpu/... given: keep the task's affinity
  bool gpus = false;  // --gpu-bind=... or --gpus-per-task given: keep CUDA_VISIBLE_DEVICES
};

struct PlanRequest {
  int local_tasks = 1;
  // Slurm GPU indices of the step on this node (SLURM_STEP_GPUS), in Slurm's
  // order. nullopt: every NVIDIA GPU of the topology (dry runs); empty: none.
  // Slurm index i is taken to be the i-th NVIDIA GPU in PCI bus id order
  // (see docs/binding.md).
  std::optional<std::vector<int>> step_gpus;
  // The tokens to write into CUDA_VISIBLE_DEVICES for each entry of step_gpus
  // (Slurm's own CUDA_VISIBLE_DEVICES of the step); empty: the indices.
  std::vector<std::string> cuda_ids;
  // Each task's GPUs (Slurm indices) when Slurm bound GPUs per task; empty
  // otherwise. Size local_tasks when given.
  std::vector<std::vector<int>> task_gpus;
  // CPUs the step may use on this node; nullopt: the topology's allowed set.
  std::optional<CpuSet> step_cpus;
  UserBinding user;
  Policy policy;
};

enum class Source { Planner, User, None };
const char* to_string(Source source);

struct EnvVar {
  std::string name;
  std::string value;
  bool keep_user_value = false;  // set only when the task's environment lacks it
};

struct TaskGpu {
  int slurm_index = -1;
  std::string cuda_id;  // its token in CUDA_VISIBLE_DEVICES
  std::string bus_id;
  std::string name;  // hwloc OS device, "" if PCI only
};

struct TaskPlan {
  int local_id = 0;
  std::vector<TaskGpu> gpus;         // the task's own GPU(s)
  std::vector<std::string> visible;  // CUDA_VISIBLE_DEVICES, in order; empty: unchanged
  CpuSet cpus;                       // empty: unchanged
  int numa = -1;                     // NUMA node OS index, -1: none
  std::optional<Nic> nic;            // closest NIC (RDMA preferred)
  std::string ifname;                // closest interface with a netdev, for TCP
  bool membind = false;
  Source gpu_source = Source::None;
  Source cpu_source = Source::None;
  Source nic_source = Source::None;
  std::vector<EnvVar> env;
};

struct NodePlan {
  std::vector<TaskPlan> tasks;
  std::optional<EnvVar> nccl_filter;  // same for every task; also inside each task's env
  std::vector<std::string> warnings;  // things worth a line in verbose mode
};

// Plans every local task. Throws PlanError when the request does not fit the
// topology (a GPU index the node lacks, no usable CPU, bad task count).
NodePlan plan_node(const Topology& topology, const PlanRequest& request);

// What Slurm left in one task, for plan_task.
struct TaskState {
  int local_id = 0;
  CpuSet cpus;                           // its current affinity
  std::optional<std::vector<int>> gpus;  // its own GPUs if Slurm bound them per task
};

// Plans the node as seen from one task: where the user bound GPUs per task the
// task's real GPUs replace the assumed layout, and where the user bound CPUs
// its current affinity is kept. Returns the node plan; the task's own entry is
// tasks[self.local_id].
NodePlan plan_task(const Topology& topology, PlanRequest request, const TaskState& self);

}  // namespace tandem::planner
