// NIC placement. Each task gets the network device closest to its GPU (or,
// without a GPU, to its NUMA domain), RDMA devices (InfiniBand, RoCE) before
// plain Ethernet whatever the distance: a remote HCA still beats a local
// Ethernet port for collective traffic. Distance levels: same PCIe switch,
// same NUMA domain, same package, anywhere. When several NICs tie, the tasks
// that see the same tie take them in turn (local id order), so two tasks on
// one socket with two HCAs use one each.
//
// Tandem's TCP transport needs a kernel interface, which a verbs-only device
// (an EFA, say) lacks, so each task also gets the closest NIC that has one.
//
// NCCL is given one filter for the whole node, never one per task: it picks
// the closest NIC per GPU by itself, and per-rank values break its topology
// detection. The filter lists the NICs the tasks were given.
#include <algorithm>
#include <map>

#include "detail.h"

namespace tandem::planner::detail {

namespace {

enum Distance { kSameSwitch = 0, kSameNuma = 1, kSamePackage = 2, kAnywhere = 3 };

Distance distance(const PciLocation& anchor, const PciLocation& nic, bool anchor_is_pci) {
  if (anchor_is_pci && anchor.switch_id >= 0 && anchor.switch_id == nic.switch_id)
    return kSameSwitch;
  if (anchor.numa >= 0 && anchor.numa == nic.numa) return kSameNuma;
  if (anchor.package >= 0 && anchor.package == nic.package) return kSamePackage;
  return kAnywhere;
}

bool allowed(const Nic& nic, const std::vector<std::string>& names) {
  if (names.empty()) return true;
  for (const std::string& name : names) {
    if (name == nic.rdma) return true;
    if (std::find(nic.netdevs.begin(), nic.netdevs.end(), name) != nic.netdevs.end()) return true;
  }
  return false;
}

// Indices of the best NICs for `anchor` among `candidates`, sorted by bus id.
std::vector<int> best(const Topology& topology, const std::vector<int>& candidates,
                      const PciLocation& anchor, bool anchor_is_pci, bool prefer_rdma) {
  std::vector<int> out;
  std::pair<int, int> best_key{99, 99};
  for (int n : candidates) {
    const Nic& nic = topology.nics[n];
    std::pair<int, int> key{prefer_rdma && !nic.is_rdma() ? 1 : 0,
                            distance(anchor, nic.pci, anchor_is_pci)};
    if (key < best_key) {
      best_key = key;
      out.clear();
    }
    if (key == best_key) out.push_back(n);
  }
  return out;
}

PciLocation anchor_of(const Topology& topology, const TaskPlan& task, int gpu, bool& is_pci) {
  is_pci = gpu >= 0;
  if (is_pci) return topology.gpus[gpu].pci;
  PciLocation where;
  for (size_t d = 0; d < topology.numa.size(); ++d) {
    if (topology.numa[d].os_index == task.numa) {
      where.numa = static_cast<int>(d);
      where.package = topology.numa[d].package;
    }
  }
  return where;
}

}  // namespace

void assign_nics(const Topology& topology, const Policy& policy, const std::vector<int>& anchor_gpu,
                 std::vector<TaskPlan>& tasks, std::vector<std::string>& warnings) {
  std::vector<int> candidates, with_netdev;
  for (int n = 0; n < static_cast<int>(topology.nics.size()); ++n) {
    if (!allowed(topology.nics[n], policy.nics)) continue;
    candidates.push_back(n);
    if (!topology.nics[n].netdevs.empty()) with_netdev.push_back(n);
  }
  if (candidates.empty()) {
    if (!topology.nics.empty()) {
      std::string names;
      for (const std::string& name : policy.nics) names += (names.empty() ? "" : ",") + name;
      warnings.push_back("no NIC of this node matches nics=" + names + "; tasks get no NIC");
    }
    return;
  }
  std::map<std::vector<int>, int> turns;  // tie set -> tasks that took from it so far
  for (size_t t = 0; t < tasks.size(); ++t) {
    bool is_pci = false;
    PciLocation anchor = anchor_of(topology, tasks[t], anchor_gpu[t], is_pci);
    std::vector<int> tie = best(topology, candidates, anchor, is_pci, true);
    int chosen = tie[turns[tie]++ % tie.size()];
    tasks[t].nic = topology.nics[chosen];
    tasks[t].nic_source = Source::Planner;
    if (!tasks[t].nic->netdevs.empty()) {
      tasks[t].ifname = tasks[t].nic->netdevs.front();
    } else if (!with_netdev.empty()) {
      std::vector<int> near = best(topology, with_netdev, anchor, is_pci, false);
      tasks[t].ifname = topology.nics[near.front()].netdevs.front();
    }
  }
}

std::optional<EnvVar> nccl_filter(const std::vector<TaskPlan>& tasks) {
  std::vector<std::string> hcas, ifnames;
  for (const TaskPlan& task : tasks) {
    if (!task.nic) continue;
    if (task.nic->is_rdma()) hcas.push_back(task.nic->rdma);
    if (!task.ifname.empty()) ifnames.push_back(task.ifname);
  }
  auto join = [](std::vector<std::string> names) {
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    std::string out = "=";  // '=': exact names, so mlx5_1 does not also match mlx5_10
    for (size_t i = 0; i < names.size(); ++i) out += (i ? "," : "") + names[i];
    return out;
  };
  if (!hcas.empty()) return EnvVar{"NCCL_IB_HCA", join(hcas), true};
  if (!ifnames.empty()) return EnvVar{"NCCL_SOCKET_IFNAME", join(ifnames), true};
  return std::nullopt;
}

}  // namespace tandem::planner::detail
