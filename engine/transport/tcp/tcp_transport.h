// TCP between nodes: the contract the collectives rely on. Implementation in
// this folder.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "transport/transport.h"

namespace tandem {

// Collective over the whole world: every rank calls it at the same time, each
// with the group it belongs to (world ranks, ascending, itself included);
// groups are disjoint. Returns a Transport whose rank i is members[i].
// Listens on the interface from TANDEM_TCP_IFNAME (set per task by the
// plugin) or the default one; addresses and a per-job secret travel through
// the bootstrap. Connections that do not present the secret are rejected.
std::unique_ptr<Transport> connect_tcp(Bootstrap& bootstrap, const std::vector<int>& members,
                                       std::chrono::milliseconds timeout);

}  // namespace tandem
