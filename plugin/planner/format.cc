#include "format.h"

#include <cstdio>

namespace tandem::planner {

namespace {

std::string gpus_text(const TaskPlan& task) {
  if (task.gpus.empty()) return "none";
  std::string out;
  for (const TaskGpu& gpu : task.gpus) {
    out += (out.empty() ? "" : ",") + std::to_string(gpu.slurm_index) + "(" + gpu.bus_id + ")";
  }
  return out;
}

std::string quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string strings(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + quote(items[i]);
  return out + "]";
}

std::string nic_json(const std::optional<Nic>& nic) {
  if (!nic) return "null";
  return "{\"name\": " + quote(nic->name()) + ", \"kind\": " + quote(to_string(nic->kind)) +
         ", \"pci\": " + quote(nic->pci.bus_id) + ", \"rdma\": " + quote(nic->rdma) +
         ", \"netdevs\": " + strings(nic->netdevs) + "}";
}

std::string task_json(const TaskPlan& task) {
  std::string gpus = "[";
  for (size_t i = 0; i < task.gpus.size(); ++i) {
    const TaskGpu& gpu = task.gpus[i];
    gpus += std::string(i ? ", " : "") + "{\"index\": " + std::to_string(gpu.slurm_index) +
            ", \"cuda_id\": " + quote(gpu.cuda_id) + ", \"pci\": " + quote(gpu.bus_id) +
            ", \"name\": " + quote(gpu.name) + "}";
  }
  gpus += "]";
  std::string env = "{";
  for (size_t i = 0; i < task.env.size(); ++i) {
    env += (i ? ", " : "") + quote(task.env[i].name) + ": " + quote(task.env[i].value);
  }
  env += "}";
  return "    {\"local_id\": " + std::to_string(task.local_id) + ", \"gpus\": " + gpus +
         ", \"visible\": " + strings(task.visible) + ", \"cpus\": " + quote(task.cpus.to_string()) +
         ", \"numa\": " + std::to_string(task.numa) + ", \"nic\": " + nic_json(task.nic) +
         ", \"ifname\": " + quote(task.ifname) +
         ", \"membind\": " + (task.membind ? "true" : "false") +
         ", \"source\": {\"gpu\": " + quote(to_string(task.gpu_source)) +
         ", \"cpu\": " + quote(to_string(task.cpu_source)) +
         ", \"nic\": " + quote(to_string(task.nic_source)) + "}, \"env\": " + env + "}";
}

}  // namespace

std::string describe(const TaskPlan& task) {
  std::string nic = task.nic ? task.nic->name() : "none";
  return "gpu=" + gpus_text(task) + "[" + to_string(task.gpu_source) +
         "] cpus=" + (task.cpus.empty() ? "unchanged" : task.cpus.to_string()) + "[" +
         to_string(task.cpu_source) +
         "] numa=" + (task.numa >= 0 ? std::to_string(task.numa) : "none") +
         (task.membind ? "(membind)" : "") + " nic=" + nic + "[" + to_string(task.nic_source) + "]";
}

std::string to_text(const NodePlan& plan, const Policy& policy) {
  std::string out = std::string("policy ") + to_string(policy.kind) +
                    ", visible=" + to_string(policy.visible) +
                    ", membind=" + (policy.membind ? "on" : "off") + "\n";
  for (const TaskPlan& task : plan.tasks) {
    out += "task " + std::to_string(task.local_id) + ":\n";
    out += "  gpu    " + gpus_text(task) + "  [" + to_string(task.gpu_source) + "]\n";
    out += "  cpus   " + (task.cpus.empty() ? std::string("unchanged") : task.cpus.to_string()) +
           "  [" + to_string(task.cpu_source) + "]\n";
    out += "  numa   " + (task.numa >= 0 ? std::to_string(task.numa) : std::string("none")) +
           (task.membind ? "  (memory bound)" : "") + "\n";
    out += "  nic    " +
           (task.nic ? task.nic->name() + " (" + to_string(task.nic->kind) + ", " +
                           task.nic->pci.bus_id + ")"
                     : std::string("none")) +
           "  [" + to_string(task.nic_source) + "]\n";
    if (!task.ifname.empty()) out += "  ifname " + task.ifname + "\n";
    for (const EnvVar& var : task.env) {
      out += "  env    " + var.name + "=" + var.value +
             (var.keep_user_value ? "  (unless already set)" : "") + "\n";
    }
  }
  for (const std::string& warning : plan.warnings) out += "warning: " + warning + "\n";
  return out;
}

std::string to_json(const NodePlan& plan, const Policy& policy) {
  std::string out = "{\n  \"policy\": {\"kind\": " + quote(to_string(policy.kind)) +
                    ", \"visible\": " + quote(to_string(policy.visible)) +
                    ", \"membind\": " + (policy.membind ? "true" : "false") +
                    ", \"nics\": " + strings(policy.nics) + "},\n  \"tasks\": [\n";
  for (size_t i = 0; i < plan.tasks.size(); ++i)
    out += task_json(plan.tasks[i]) + (i + 1 < plan.tasks.size() ? ",\n" : "\n");
  out += "  ],\n  \"nccl_filter\": ";
  out += plan.nccl_filter
             ? "{" + quote(plan.nccl_filter->name) + ": " + quote(plan.nccl_filter->value) + "}"
             : "null";
  out += ",\n  \"warnings\": " + strings(plan.warnings) + "\n}\n";
  return out;
}

}  // namespace tandem::planner
