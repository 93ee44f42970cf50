#include "topology.h"

namespace tandem::planner {

const char* to_string(NicKind kind) {
  switch (kind) {
    case NicKind::InfiniBand: return "infiniband";
    case NicKind::RoCE: return "roce";
    case NicKind::Ethernet: break;
  }
  return "ethernet";
}

std::string Nic::name() const {
  if (!rdma.empty()) return rdma;
  return netdevs.empty() ? pci.bus_id : netdevs.front();
}

}  // namespace tandem::planner
