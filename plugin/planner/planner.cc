// GPU placement and assembly of the plan. See docs/binding.md for the policy
// in prose; cpu_split.cc and nic_choice.cc hold the CPU and NIC steps.
//
// GPUs are taken in order of locality (NUMA domain, then PCI bus id, so GPUs
// behind one switch stay together) and handed out in contiguous blocks:
// tasks == GPUs gives one each; more tasks share a GPU in blocks of
// neighbouring local ids; fewer tasks each get a block of neighbouring GPUs
// inside one NUMA domain where the task count allows it.
#include "planner.h"

#include <algorithm>
#include <set>

#include "detail.h"
#include "errors.h"

namespace tandem::planner {

namespace detail {

std::pair<int, int> block_range(int bin, int items, int bins) {
  int base = items / bins, extra = items % bins;
  int first = bin * base + std::min(bin, extra);
  return {first, base + (bin < extra ? 1 : 0)};
}

int block_owner(int item, int items, int bins) {
  for (int bin = 0; bin < bins; ++bin) {
    auto [first, count] = block_range(bin, items, bins);
    if (item < first + count) return bin;
  }
  return bins - 1;
}

}  // namespace detail

namespace {

using detail::block_range;

struct StepGpus {
  std::vector<int> index;            // Slurm indices, in Slurm's order
  std::vector<std::string> cuda_id;  // CUDA_VISIBLE_DEVICES token of each
  std::vector<int> by_locality;      // positions into index, closest first
};

StepGpus resolve_step_gpus(const Topology& topology, const PlanRequest& request) {
  StepGpus step;
  int ngpus = static_cast<int>(topology.gpus.size());
  if (!request.step_gpus) {
    for (int i = 0; i < ngpus; ++i) step.index.push_back(i);
  } else {
    step.index = *request.step_gpus;
  }
  std::set<int> seen;
  for (int index : step.index) {
    if (index < 0 || index >= ngpus) {
      throw PlanError("GPU index " + std::to_string(index) + " was given, but the topology (" +
                      topology.source + ") has " + std::to_string(ngpus) +
                      " NVIDIA GPU(s) (PCI vendor 0x10de): check gres.conf or the topology file");
    }
    if (!seen.insert(index).second) {
      throw PlanError("GPU index " + std::to_string(index) + " is listed twice in the step's GPUs");
    }
  }
  if (!request.cuda_ids.empty() && request.cuda_ids.size() != step.index.size()) {
    throw PlanError("CUDA_VISIBLE_DEVICES has " + std::to_string(request.cuda_ids.size()) +
                    " entries but the step has " + std::to_string(step.index.size()) + " GPU(s)");
  }
  for (size_t i = 0; i < step.index.size(); ++i) {
    step.cuda_id.push_back(request.cuda_ids.empty() ? std::to_string(step.index[i])
                                                    : request.cuda_ids[i]);
    step.by_locality.push_back(static_cast<int>(i));
  }
  auto key = [&](int pos) {
    const Gpu& gpu = topology.gpus[step.index[pos]];
    return std::make_pair(gpu.pci.numa < 0 ? 1 << 30 : gpu.pci.numa, gpu.pci.bus_id);
  };
  std::stable_sort(step.by_locality.begin(), step.by_locality.end(),
                   [&](int a, int b) { return key(a) < key(b); });
  return step;
}

// Runs of step.by_locality that share a NUMA domain: (first, count).
std::vector<std::pair<int, int>> domain_runs(const Topology& topology, const StepGpus& step) {
  std::vector<std::pair<int, int>> runs;
  int previous = -2;
  for (int i = 0; i < static_cast<int>(step.by_locality.size()); ++i) {
    int numa = topology.gpus[step.index[step.by_locality[i]]].pci.numa;
    if (runs.empty() || numa != previous) runs.push_back({i, 0});
    ++runs.back().second;
    previous = numa;
  }
  return runs;
}

// How many of `tasks` tasks each run gets: one each, then one at a time to the
// run with the most GPUs per task (the earlier run on ties). Needs
// runs.size() <= tasks < total GPUs.
std::vector<int> apportion(const std::vector<std::pair<int, int>>& runs, int tasks) {
  std::vector<int> share(runs.size(), 1);
  for (int left = tasks - static_cast<int>(runs.size()); left > 0; --left) {
    size_t best = 0;
    for (size_t r = 1; r < runs.size(); ++r) {
      // runs[r].second / share[r] > runs[best].second / share[best], without division
      if (runs[r].second * share[best] > runs[best].second * share[r]) best = r;
    }
    ++share[best];
  }
  return share;
}

// Positions (into step.index) of each task's GPUs.
std::vector<std::vector<int>> assign_gpus(const Topology& topology, const StepGpus& step,
                                          const PlanRequest& request) {
  int tasks = request.local_tasks, ngpus = static_cast<int>(step.index.size());
  std::vector<std::vector<int>> out(tasks);
  if (ngpus == 0) return out;
  if (!request.task_gpus.empty()) {
    for (int t = 0; t < tasks; ++t) {
      for (int index : request.task_gpus[t]) {
        auto it = std::find(step.index.begin(), step.index.end(), index);
        if (it == step.index.end()) {
          throw PlanError("task " + std::to_string(t) + " was given GPU " + std::to_string(index) +
                          ", which is not among the step's GPUs");
        }
        out[t].push_back(static_cast<int>(it - step.index.begin()));
      }
    }
    return out;
  }
  if (tasks >= ngpus) {
    for (int t = 0; t < tasks; ++t)
      out[t].push_back(step.by_locality[detail::block_owner(t, tasks, ngpus)]);
    return out;
  }
  // Fewer tasks than GPUs: tasks are first apportioned to the NUMA domains in
  // proportion to their GPUs so that no group straddles two domains, then
  // each domain's GPUs are split in blocks among its tasks.
  std::vector<std::pair<int, int>> runs =
      domain_runs(topology, step);  // (first, count) in by_locality
  if (static_cast<int>(runs.size()) > tasks) runs = {{0, ngpus}};
  std::vector<int> share = apportion(runs, tasks);
  int t = 0;
  for (size_t r = 0; r < runs.size(); ++r) {
    for (int k = 0; k < share[r]; ++k, ++t) {
      auto [first, count] = block_range(k, runs[r].second, share[r]);
      for (int g = first; g < first + count; ++g)
        out[t].push_back(step.by_locality[runs[r].first + g]);
    }
  }
  return out;
}

// CUDA_VISIBLE_DEVICES for one task: the step's GPUs in PCI bus id order
// with the task's own moved to index local_id (local_id modulo the GPU count
// when tasks outnumber GPUs, so local_rank % device_count() finds it).
std::vector<std::string> visible_order(const Topology& topology, const StepGpus& step,
                                       const std::vector<int>& own, int local_id, Visible mode) {
  std::vector<std::string> out;
  if (mode == Visible::Own) {
    for (int pos : own) out.push_back(step.cuda_id[pos]);
    return out;
  }
  std::vector<int> rest;
  for (size_t pos = 0; pos < step.index.size(); ++pos) {
    if (std::find(own.begin(), own.end(), static_cast<int>(pos)) == own.end())
      rest.push_back(static_cast<int>(pos));
  }
  std::sort(rest.begin(), rest.end(), [&](int a, int b) {
    return topology.gpus[step.index[a]].pci.bus_id < topology.gpus[step.index[b]].pci.bus_id;
  });
  int ngpus = static_cast<int>(step.index.size()), nown = static_cast<int>(own.size());
  int at = std::min(local_id % ngpus, ngpus - nown);
  std::vector<int> order(rest.begin(), rest.end());
  order.insert(order.begin() + at, own.begin(), own.end());
  for (int pos : order) out.push_back(step.cuda_id[pos]);
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out;
}

void fill_env(TaskPlan& task, const std::optional<EnvVar>& nccl) {
  if (!task.gpus.empty()) {
    if (task.gpu_source == Source::Planner)
      task.env.push_back({"CUDA_VISIBLE_DEVICES", join(task.visible)});
    task.env.push_back({"CUDA_DEVICE_ORDER", "PCI_BUS_ID"});
  }
  if (task.nic) task.env.push_back({"TANDEM_NIC", task.nic->name()});
  if (!task.ifname.empty()) task.env.push_back({"TANDEM_TCP_IFNAME", task.ifname});
  if (nccl) task.env.push_back(*nccl);
}

void check_request(const PlanRequest& request) {
  if (request.local_tasks < 1) {
    throw PlanError("the number of local tasks must be at least 1, got " +
                    std::to_string(request.local_tasks));
  }
  if (!request.task_gpus.empty() &&
      static_cast<int>(request.task_gpus.size()) != request.local_tasks) {
    throw PlanError("per-task GPUs were given for " + std::to_string(request.task_gpus.size()) +
                    " tasks but the node has " + std::to_string(request.local_tasks));
  }
}

}  // namespace

const char* to_string(Source source) {
  switch (source) {
    case Source::Planner: return "planner";
    case Source::User: return "user";
    case Source::None: break;
  }
  return "none";
}

NodePlan plan_node(const Topology& topology, const PlanRequest& request) {
  check_request(request);
  NodePlan plan;
  plan.tasks.resize(request.local_tasks);
  for (int t = 0; t < request.local_tasks; ++t) plan.tasks[t].local_id = t;
  if (request.policy.kind == PolicyKind::None) return plan;

  StepGpus step = resolve_step_gpus(topology, request);
  std::vector<std::vector<int>> own = assign_gpus(topology, step, request);
  Source gpu_source = request.task_gpus.empty() ? Source::Planner : Source::User;
  std::vector<int> home(request.local_tasks, -1), anchor(request.local_tasks, -1);
  for (int t = 0; t < request.local_tasks; ++t) {
    TaskPlan& task = plan.tasks[t];
    for (int pos : own[t]) {
      const Gpu& gpu = topology.gpus[step.index[pos]];
      task.gpus.push_back({step.index[pos], step.cuda_id[pos], gpu.pci.bus_id, gpu.name});
    }
    if (own[t].empty()) continue;
    task.gpu_source = gpu_source;
    if (gpu_source == Source::Planner) {
      task.visible = visible_order(topology, step, own[t], t, request.policy.visible);
    }
    anchor[t] = step.index[own[t].front()];
    const PciLocation& where = topology.gpus[anchor[t]].pci;
    home[t] = where.numa;
    if (home[t] < 0) {  // attached above the NUMA level: take its package's first domain
      for (size_t d = 0; d < topology.numa.size() && home[t] < 0; ++d) {
        if (topology.numa[d].package == where.package) home[t] = static_cast<int>(d);
      }
    }
  }

  CpuSet usable = topology.allowed;
  if (request.step_cpus)
    usable = usable.empty() ? *request.step_cpus : usable.intersect(*request.step_cpus);
  if (usable.empty()) {
    throw PlanError("the step's CPUs (" +
                    (request.step_cpus ? request.step_cpus->to_string() : std::string("none")) +
                    ") are not among the CPUs of the topology (" + topology.source + ": " +
                    topology.allowed.to_string() +
                    "): check that the topology describes this node");
  }
  detail::assign_cpus(topology, usable, home, plan.tasks, plan.warnings);
  detail::assign_nics(topology, request.policy, anchor, plan.tasks, plan.warnings);
  plan.nccl_filter = detail::nccl_filter(plan.tasks);
  for (TaskPlan& task : plan.tasks) {
    task.membind = request.policy.membind && task.numa >= 0;
    fill_env(task, plan.nccl_filter);
  }
  return plan;
}

NodePlan plan_task(const Topology& topology, PlanRequest request, const TaskState& self) {
  check_request(request);
  if (self.local_id < 0 || self.local_id >= request.local_tasks) {
    throw PlanError("local task id " + std::to_string(self.local_id) + " is outside 0.." +
                    std::to_string(request.local_tasks - 1));
  }
  if (request.user.gpus && request.task_gpus.empty()) {
    // Slurm's per-task GPU binding hands task t the t-th slice of the step's
    // GPUs; assume that for the other tasks and use what this task really got.
    std::vector<int> step = request.step_gpus.value_or(std::vector<int>{});
    int per_task =
        step.empty() ? 0 : std::max<int>(1, static_cast<int>(step.size()) / request.local_tasks);
    request.task_gpus.resize(request.local_tasks);
    for (int t = 0; t < request.local_tasks && per_task > 0; ++t) {
      for (int g = 0; g < per_task; ++g) {
        request.task_gpus[t].push_back(step[(t * per_task + g) % step.size()]);
      }
    }
    if (self.gpus) request.task_gpus[self.local_id] = *self.gpus;
  }
  NodePlan plan = plan_node(topology, request);
  TaskPlan& task = plan.tasks[self.local_id];
  if (request.user.cpus && request.policy.kind != PolicyKind::None) {
    task.cpus = self.cpus;
    task.cpu_source = Source::User;
    task.membind = false;
  }
  return plan;
}

}  // namespace tandem::planner
