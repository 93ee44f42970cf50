// Extraction of the planner's model from hwloc.
//
// NVIDIA GPUs are found as PCI devices of vendor 0x10de with a display class
// (0x03xx), not through OS devices: depending on the hwloc build and the
// machine they appear as nvmlN GPUs, cudaN co-processors, both, or only as
// PCI devices. NICs are PCI devices carrying a Network or OpenFabrics OS
// device. Where a device sits is read from its ancestors: its non-I/O parent
// gives the NUMA domain and package, its topmost PCI-to-PCI bridge the switch.
#include "hwloc_loader.h"

#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "errors.h"

namespace tandem::planner {

namespace {

constexpr unsigned kNvidiaVendor = 0x10de;

CpuSet to_cpuset(hwloc_const_bitmap_t bitmap) {
  std::vector<int> cpus;
  if (bitmap == nullptr || hwloc_bitmap_weight(bitmap) < 0) return CpuSet();
  for (int i = hwloc_bitmap_first(bitmap); i >= 0; i = hwloc_bitmap_next(bitmap, i))
    cpus.push_back(i);
  return CpuSet(std::move(cpus));
}

std::string bus_id(const hwloc_obj_t pci) {
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain,
                pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
  return text;
}

void extract_numa(hwloc_topology_t topo, Topology& model) {
  for (hwloc_obj_t node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, nullptr);
       node != nullptr; node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, node)) {
    NumaDomain domain;
    domain.os_index = static_cast<int>(node->os_index);
    hwloc_obj_t package = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, node);
    domain.package = package != nullptr ? static_cast<int>(package->logical_index) : 0;
    // Cores are the units of CPU binding; a machine without Core objects
    // (some VMs, some XML) gets one "core" per PU.
    hwloc_obj_type_t unit =
        hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    int n = hwloc_get_nbobjs_inside_cpuset_by_type(topo, node->cpuset, unit);
    for (int i = 0; i < n; ++i) {
      hwloc_obj_t core = hwloc_get_obj_inside_cpuset_by_type(topo, node->cpuset, unit, i);
      domain.cores.push_back(to_cpuset(core->cpuset));
    }
    model.numa.push_back(std::move(domain));
  }
}

PciLocation locate(hwloc_topology_t topo, const Topology& model, hwloc_obj_t pci) {
  PciLocation where;
  where.bus_id = bus_id(pci);
  for (hwloc_obj_t up = pci->parent; up != nullptr && up->type == HWLOC_OBJ_BRIDGE;
       up = up->parent) {
    if (up->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI)
      where.switch_id = static_cast<long>(up->gp_index);
  }
  hwloc_obj_t parent = hwloc_get_non_io_ancestor_obj(topo, pci);
  if (parent == nullptr) return where;
  hwloc_obj_t package = parent->type == HWLOC_OBJ_PACKAGE
                            ? parent
                            : hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, parent);
  if (package != nullptr) where.package = static_cast<int>(package->logical_index);
  // The device's NUMA domain: the single memory node local to its parent.
  if (parent->nodeset != nullptr && hwloc_bitmap_weight(parent->nodeset) == 1) {
    int os = hwloc_bitmap_first(parent->nodeset);
    for (size_t d = 0; d < model.numa.size(); ++d) {
      if (model.numa[d].os_index == os) where.numa = static_cast<int>(d);
    }
  }
  return where;
}

bool is_nvidia_gpu(hwloc_obj_t pci) {
  return pci->attr->pcidev.vendor_id == kNvidiaVendor && (pci->attr->pcidev.class_id >> 8) == 0x03;
}

void extract_devices(hwloc_topology_t topo, Topology& model) {
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, nullptr); pci != nullptr;
       pci = hwloc_get_next_pcidev(topo, pci)) {
    std::string gpu_name, rdma;
    std::vector<std::string> netdevs;
    for (hwloc_obj_t os = pci->io_first_child; os != nullptr; os = os->next_sibling) {
      if (os->type != HWLOC_OBJ_OS_DEVICE || os->name == nullptr) continue;
      switch (os->attr->osdev.type) {
        case HWLOC_OBJ_OSDEV_GPU:
        case HWLOC_OBJ_OSDEV_COPROC:
          // Prefer the nvml/cuda name over opencl/rsmi ones for display.
          if (gpu_name.empty() || std::strncmp(os->name, "nvml", 4) == 0) gpu_name = os->name;
          break;
        case HWLOC_OBJ_OSDEV_NETWORK: netdevs.emplace_back(os->name); break;
        case HWLOC_OBJ_OSDEV_OPENFABRICS: rdma = os->name; break;
        default: break;
      }
    }
    if (is_nvidia_gpu(pci)) {
      model.gpus.push_back({locate(topo, model, pci), gpu_name});
    } else if (!netdevs.empty() || !rdma.empty()) {
      Nic nic;
      nic.pci = locate(topo, model, pci);
      nic.rdma = rdma;
      nic.netdevs = netdevs;
      bool infiniband = pci->attr->pcidev.class_id == 0x0207;
      nic.kind =
          infiniband ? NicKind::InfiniBand : (rdma.empty() ? NicKind::Ethernet : NicKind::RoCE);
      model.nics.push_back(std::move(nic));
    }
  }
  auto by_bus = [](const auto& a, const auto& b) { return a.pci.bus_id < b.pci.bus_id; };
  std::sort(model.gpus.begin(), model.gpus.end(), by_bus);
  std::sort(model.nics.begin(), model.nics.end(), by_bus);
}

}  // namespace

void LoadedTopology::Closer::operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }

LoadedTopology::LoadedTopology(std::unique_ptr<hwloc_topology, Closer> handle, std::string source)
    : handle_(std::move(handle)) {
  hwloc_topology_t topo = handle_.get();
  model_.source = std::move(source);
  model_.allowed = to_cpuset(hwloc_topology_get_allowed_cpuset(topo));
  extract_numa(topo, model_);
  extract_devices(topo, model_);
}

namespace {

hwloc_topology_t init_topology(const std::string& what) {
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) != 0) {
    throw TopologyError("hwloc_topology_init failed for " + what + ": " + std::strerror(errno));
  }
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  return topo;
}

}  // namespace

LoadedTopology LoadedTopology::live() {
  std::unique_ptr<hwloc_topology, Closer> topo(init_topology("this machine"));
  if (hwloc_topology_load(topo.get()) != 0) {
    throw TopologyError(std::string("hwloc could not read this machine's topology: ") +
                        std::strerror(errno));
  }
  return LoadedTopology(std::move(topo), "live");
}

LoadedTopology LoadedTopology::live_shared() {
  std::unique_ptr<hwloc_topology, Closer> topo(init_topology("this machine"));
  if (hwloc_topology_set_flags(topo.get(), HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) != 0 ||
      hwloc_topology_load(topo.get()) != 0) {
    throw TopologyError(std::string("hwloc could not read this machine's topology: ") +
                        std::strerror(errno));
  }
  return LoadedTopology(std::move(topo), "live");
}

LoadedTopology LoadedTopology::for_this_process() const {
  hwloc_topology_t copy = nullptr;
  if (hwloc_topology_dup(&copy, handle_.get()) != 0) {
    throw TopologyError(std::string("hwloc could not copy the node's topology: ") +
                        std::strerror(errno));
  }
  std::unique_ptr<hwloc_topology, Closer> topo(copy);
  // As a load without INCLUDE_DISALLOWED does: keep only what this process's
  // cgroup allows, CPUs first, then memory nodes.
  hwloc_bitmap_t cpus = nullptr, nodes = nullptr;
  const bool ok =
      hwloc_topology_allow(copy, nullptr, nullptr, HWLOC_ALLOW_FLAG_LOCAL_RESTRICTIONS) == 0 &&
      (cpus = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(copy))) != nullptr &&
      (nodes = hwloc_bitmap_dup(hwloc_topology_get_allowed_nodeset(copy))) != nullptr &&
      hwloc_topology_restrict(copy, cpus, 0) == 0 &&
      hwloc_topology_restrict(copy, nodes, HWLOC_RESTRICT_FLAG_BYNODESET) == 0;
  const int err = errno;
  hwloc_bitmap_free(cpus);
  hwloc_bitmap_free(nodes);
  if (!ok) {
    throw TopologyError(
        std::string("hwloc could not restrict the node's topology to this task's CPUs: ") +
        std::strerror(err));
  }
  return LoadedTopology(std::move(topo), "live");
}

LoadedTopology LoadedTopology::from_xml(const std::string& path) {
  std::FILE* probe = std::fopen(path.c_str(), "r");
  if (probe == nullptr) {
    throw TopologyError("cannot read topology file '" + path + "': " + std::strerror(errno) +
                        "; give an hwloc XML file (lstopo --of xml)");
  }
  std::fclose(probe);
  std::unique_ptr<hwloc_topology, Closer> topo(init_topology("'" + path + "'"));
  if (hwloc_topology_set_xml(topo.get(), path.c_str()) != 0 ||
      hwloc_topology_set_flags(topo.get(), HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM) != 0 ||
      hwloc_topology_load(topo.get()) != 0) {
    throw TopologyError("topology file '" + path + "' is not a valid hwloc XML topology" +
                        " (expected the output of lstopo --of xml)");
  }
  return LoadedTopology(std::move(topo), path);
}

}  // namespace tandem::planner
