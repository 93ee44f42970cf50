// A Transport between threads of one process: the stand-in for TCP in unit
// tests, so that hierarchical layouts (several "nodes" in one process) run
// through exactly the code paths the real job uses.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "transport/transport.h"

namespace tandem {

class MemoryNetwork;  // shared by the threads of one test world

std::shared_ptr<MemoryNetwork> make_memory_network();

// Same contract as connect_tcp (tcp/tcp_transport.h): collective over the
// world, each rank passes the group it belongs to (world ranks, ascending);
// rank i of the result is members[i]. recv() waits at most `timeout`.
std::unique_ptr<Transport> connect_memory(const std::shared_ptr<MemoryNetwork>& network,
                                          Bootstrap& bootstrap, const std::vector<int>& members,
                                          std::chrono::milliseconds timeout);

}  // namespace tandem
