// Topology-aware binding of one task (the seam remote.cc calls), with the
// planner of plugin/planner: read the topology, plan the whole node as this
// task sees it, bind this process and write the plan's environment.
//
// What Slurm tells the task, and how it is read:
//   - the step's GPUs: SLURM_STEP_GPUS (Slurm indices), with the step's own
//     CUDA_VISIBLE_DEVICES tokens written back reordered (global indices, or
//     positions when Slurm constrains devices);
//   - per-task GPUs (--gpus-per-task, --gpu-bind): SLURM_GPUS_PER_TASK or
//     SLURM_GPU_BIND is set only when the user asked; then this task's
//     CUDA_VISIBLE_DEVICES is Slurm's and is kept;
//   - an explicit CPU binding: SLURM_CPU_BIND_TYPE naming a map, a rank
//     layout or none. Slurm's own automatic binding also shows up there as
//     mask_cpu, so mask_cpu is not taken as the user's (it is overridden);
//   - GPUs Slurm gave but hwloc does not see at all (containers without PCI
//     access, fake devices) leave CUDA_VISIBLE_DEVICES alone, with a note;
//   - the step's CPUs: the topology's allowed set (the job's cgroup cpuset
//     for a live topology), the same for every task, so all tasks of a node
//     compute the same split.
#include "task_binding.h"

#include <algorithm>
#include <charconv>
#include <sched.h>

#include "apply.h"
#include "errors.h"
#include "format.h"
#include "hwloc_loader.h"
#include "planner.h"
#include "plugin_error.h"

namespace tandem::plugin {
namespace {

namespace tp = tandem::planner;

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

int to_index(const std::string& var, const std::string& text, const std::string& item) {
  int value = -1;
  auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
  if (ec != std::errc() || end != item.data() + item.size() || value < 0) {
    throw PluginError(var + "='" + text +
                      "' is not a list of GPU indices: cannot plan GPU binding");
  }
  return value;
}

std::vector<int> indices(const std::string& var, const std::string& text) {
  std::vector<int> out;
  for (const std::string& item : split_commas(text)) out.push_back(to_index(var, text, item));
  return out;
}

bool user_bound_cpus(const TaskEnv& env) {
  const std::string type = env.get("SLURM_CPU_BIND_TYPE").value_or("");
  for (const char* explicit_type :
       {"map_cpu", "map_ldom", "mask_ldom", "rank_ldom", "rank", "none"}) {
    if (type.find(explicit_type) != std::string::npos) return true;
  }
  return false;
}

tp::CpuSet current_affinity() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &mask)) cpus.push_back(cpu);
  }
  return tp::CpuSet(std::move(cpus));
}

// The step's GPUs, their CUDA_VISIBLE_DEVICES tokens, and this task's own
// GPUs when Slurm bound them per task.
void read_gpus(const TaskEnv& env, tp::PlanRequest& request, tp::TaskState& self) {
  const auto step = env.get("SLURM_STEP_GPUS");
  const auto visible = env.get("CUDA_VISIBLE_DEVICES");
  request.user.gpus =
      env.get("SLURM_GPUS_PER_TASK").has_value() || env.get("SLURM_GPU_BIND").has_value();
  if (!step && !visible) {
    request.step_gpus = std::vector<int>{};
    return;
  }
  request.step_gpus =
      indices(step ? "SLURM_STEP_GPUS" : "CUDA_VISIBLE_DEVICES", step ? *step : *visible);
  if (!visible) return;
  std::vector<std::string> tokens = split_commas(*visible);
  if (request.user.gpus) {
    // This task's own GPUs: global indices when they are among the step's,
    // else positions in the step's list (devices constrained by cgroup).
    std::vector<int> own = indices("CUDA_VISIBLE_DEVICES", *visible);
    bool global = true;
    for (int i : own) {
      if (std::find(request.step_gpus->begin(), request.step_gpus->end(), i) ==
          request.step_gpus->end())
        global = false;
    }
    if (!global) {
      for (int& i : own) {
        if (i >= static_cast<int>(request.step_gpus->size())) {
          throw PluginError("CUDA_VISIBLE_DEVICES='" + *visible +
                            "' does not match SLURM_STEP_GPUS='" + step.value_or("") +
                            "': cannot tell which GPUs this task has");
        }
        i = (*request.step_gpus)[i];
      }
    }
    self.gpus = own;
  } else if (tokens.size() == request.step_gpus->size()) {
    request.cuda_ids = tokens;
  }
}

void export_env(const tp::TaskPlan& task, TaskEnv& env) {
  for (const tp::EnvVar& var : task.env) {
    if (var.keep_user_value && env.get(var.name)) continue;
    env.set(var.name, var.value);
  }
}

}  // namespace

BindingResult bind_task(const Config& config, const TaskIdentity& id, TaskEnv& env,
                        const tp::LoadedTopology* node_topology) {
  if (config.binding == "none") return {"binding: none (binding=none in plugstack.conf)"};
  try {
    // The node's copy, cut to this task's cgroup, is what a live load here
    // would read, without each task of the node discovering it again.
    tp::LoadedTopology topology = !config.topology_xml.empty()
                                      ? tp::LoadedTopology::from_xml(config.topology_xml)
                                  : node_topology ? node_topology->for_this_process()
                                                  : tp::LoadedTopology::live();
    tp::PlanRequest request;
    request.local_tasks = static_cast<int>(id.local_size);
    request.policy = config.policy;
    request.user.cpus = user_bound_cpus(env);
    tp::TaskState self;
    self.local_id = static_cast<int>(id.local_rank);
    self.cpus = current_affinity();
    read_gpus(env, request, self);
    std::string note;
    if (topology.model().gpus.empty() && request.step_gpus && !request.step_gpus->empty()) {
      // Slurm gave GPUs hwloc cannot see (no PCI access in a container, fake
      // devices in tests): bind CPUs and NIC, leave CUDA_VISIBLE_DEVICES alone.
      request.step_gpus = std::vector<int>{};
      request.cuda_ids.clear();
      request.user.gpus = false;
      self.gpus.reset();
      note = " (the topology shows no NVIDIA GPU: GPU binding skipped)";
    }
    tp::NodePlan plan = tp::plan_task(topology.model(), request, self);
    const tp::TaskPlan& task = plan.tasks.at(self.local_id);
    tp::apply_binding(topology, task);
    export_env(task, env);
    std::string summary = "binding: " + tp::describe(task) + note;
    for (const std::string& warning : plan.warnings) summary += " (warning: " + warning + ")";
    return {summary};
  } catch (const tp::TopologyError& e) {
    throw PluginError(std::string("binding: ") + e.what() +
                      " (plugstack.conf topology=, or binding=none)");
  } catch (const tp::PlanError& e) { throw PluginError(std::string("binding: ") + e.what()); }
}

}  // namespace tandem::plugin
