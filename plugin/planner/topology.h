// The small model of a node that the planner works on. It is extracted from
// hwloc by hwloc_loader.h, and unit tests may also build it by hand. It holds
// only what binding needs: NUMA domains with their cores, NVIDIA GPUs and
// network devices with where they sit on PCIe.
#pragma once

#include <string>
#include <vector>

#include "cpu_set.h"

namespace tandem::planner {

// One NUMA domain: the memory node and the cores whose memory is local to it.
struct NumaDomain {
  int os_index = 0;           // NUMA node number (numactl, membind)
  int package = 0;            // index of the package (socket) holding it
  std::vector<CpuSet> cores;  // each core's hardware threads, in hwloc's logical order
};

// Where a PCI device sits. Two devices are behind the same PCIe switch when
// they share a PCI-to-PCI bridge below the host bridge (switch_id equal and
// not -1); a device straight below a root complex has switch_id -1.
struct PciLocation {
  std::string bus_id;   // "0000:18:00.0", lower case, with domain
  int numa = -1;        // index into Topology::numa, -1 if unknown
  int package = -1;     // package index, -1 if unknown
  long switch_id = -1;  // hwloc gp_index of the topmost bridge below the host bridge
};

// An NVIDIA GPU (PCI vendor 0x10de, class 3D/VGA). name is the hwloc OS
// device that showed it ("nvml0", "cuda0") or "" when it is only a PCI device.
struct Gpu {
  PciLocation pci;
  std::string name;
};

enum class NicKind { InfiniBand, RoCE, Ethernet };
const char* to_string(NicKind kind);

// A network PCI device. rdma is the verbs device ("mlx5_0") if it has one;
// netdevs are its kernel interfaces ("ib0", "eth0").
struct Nic {
  PciLocation pci;
  NicKind kind = NicKind::Ethernet;
  std::string rdma;
  std::vector<std::string> netdevs;

  bool is_rdma() const { return !rdma.empty(); }
  // The name users know it by: the verbs device if any, else the interface.
  std::string name() const;
};

struct Topology {
  std::vector<NumaDomain> numa;  // in hwloc's logical order
  std::vector<Gpu> gpus;         // sorted by PCI bus id
  std::vector<Nic> nics;         // sorted by PCI bus id
  CpuSet allowed;                // CPUs the topology allows (cgroup, XML allowed_cpuset)
  std::string source;            // "live" or the XML path, for messages
};

}  // namespace tandem::planner
