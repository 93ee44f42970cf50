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

// TANDEM_TCP_SPIN_US: how long a call keeps polling its sockets without
// sleeping (yielding the CPU between tries) after the last byte moved, before
// it sleeps in poll(). Waking a sleeping thread costs 20-60 us on a VM whose
// idle vCPU halted, more than a whole round trip between two nodes; a busy
// transfer keeps spinning as long as bytes keep moving. 0: sleep at once.
constexpr const char* kSpinVariable = "TANDEM_TCP_SPIN_US";
constexpr int kDefaultSpinUs = 100;
std::chrono::microseconds tcp_spin_from_environment();

// TANDEM_TCP_STATS=1: each transport prints, when it is destroyed, how its
// calls waited (done at once, caught while spinning, slept and how long,
// spins paused or skipped), to see where latency goes (docs/tcp.md).
constexpr const char* kStatsVariable = "TANDEM_TCP_STATS";
bool tcp_stats_from_environment();

}  // namespace tandem
