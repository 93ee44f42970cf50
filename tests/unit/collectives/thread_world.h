// Ranks as threads: runs a body on every rank of a MemoryWorld, each with its
// own Communicator (shared memory inside a "node", the memory transport
// between "nodes"), and rethrows the first rank's failure in the test thread.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "bootstrap/memory_bootstrap.h"
#include "communicator/communicator.h"
#include "transport/memory/memory_transport.h"

namespace tandem {
namespace testing {

inline CommunicatorOptions small_options() {
  CommunicatorOptions o;
  o.timeout = std::chrono::seconds(30);
  o.shm_chunk_bytes = 4096;  // many pipeline steps even for small counts
  o.shm_max_chunk_bytes =
      4096;  // and always: the changing step has its own test (test_staged_step)
  o.shm_arena_bytes = 1 << 20;
  return o;
}

// layout: ranks per node in block order ({3, 1}); placement, when given,
// names each rank's node instead ({0, 1, 0, 1}: cyclic).
inline void run_world(int size, const std::vector<int>& layout,
                      const std::function<void(Communicator&)>& body,
                      const CommunicatorOptions& options = small_options(),
                      const std::vector<int>& placement = {}) {
  auto world = placement.empty() ? std::make_shared<MemoryWorld>(size, layout)
                                 : MemoryWorld::with_placement(placement);
  auto net = make_memory_network();
  std::vector<std::exception_ptr> errors(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto connect = [net](Bootstrap& b, const std::vector<int>& m, std::chrono::milliseconds t,
                             const std::vector<int>&) { return connect_memory(net, b, m, t); };
        Communicator comm(std::make_unique<MemoryBootstrap>(world, r), connect, options);
        body(comm);
      } catch (...) { errors[r] = std::current_exception(); }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < size; ++r) {
    if (!errors[r]) continue;
    try {
      std::rethrow_exception(errors[r]);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "rank " << r << " of " << size << ": " << e.what();
    }
  }
}

// The layouts every collective is tested on: one node of each size 1..8,
// and several "nodes" joined by the memory transport.
struct Layout {
  int size;
  std::vector<int> per_node;
  std::vector<int> placement = {};  // node of each rank, for non-block placements
  std::string name() const {
    std::string s = std::to_string(size) + "ranks";
    for (int n : per_node) s += "_" + std::to_string(n);
    if (!placement.empty()) s += "_placed";
    for (int n : placement) s += std::to_string(n);
    return s;
  }
};

inline void PrintTo(const Layout& l, std::ostream* os) { *os << l.name(); }

inline void run_layout(const Layout& l, const std::function<void(Communicator&)>& body,
                       const CommunicatorOptions& options = small_options()) {
  run_world(l.size, l.per_node, body, options, l.placement);
}

inline std::vector<Layout> all_layouts() {
  std::vector<Layout> out;
  for (int n = 1; n <= 8; ++n) out.push_back({n, {}});
  out.push_back({6, {3, 3}});
  out.push_back({4, {3, 1}});
  out.push_back({3, {1, 1, 1}});
  out.push_back({4, {2, 2}});
  out.push_back({2, {1, 1}});
  // Across more nodes (the algorithms between nodes: folds, trees, rings):
  // one rank on each of 8, three nodes of two, and five uneven nodes.
  out.push_back({8, {1, 1, 1, 1, 1, 1, 1, 1}});
  out.push_back({6, {2, 2, 2}});
  out.push_back({7, {2, 1, 2, 1, 1}});
  // Cyclic placements (srun -m cyclic): a node's ranks are not contiguous.
  out.push_back({6, {}, {0, 1, 0, 1, 0, 1}});
  out.push_back({4, {}, {0, 1, 0, 0}});
  // Node ids out of rank order (PMIX_NODEID numbers the allocation, so a
  // hostfile of node2,node1,node1 puts rank 0 on node 1) and arbitrary
  // interleavings: the groups across nodes are then not in node order.
  out.push_back({3, {}, {1, 0, 0}});
  out.push_back({4, {}, {1, 0, 1, 0}});
  out.push_back({4, {}, {0, 1, 1, 0}});
  out.push_back({5, {}, {1, 2, 0, 1, 0}});
  out.push_back({6, {}, {2, 0, 1, 1, 0, 2}});
  return out;
}

}  // namespace testing
}  // namespace tandem
