#include "identity.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "plugin_error.h"

namespace tandem::plugin {
namespace {

TEST(TasksPerNode, ExpandsSlurmsCompression) {
  EXPECT_EQ(parse_tasks_per_node("2(x3)"), (std::vector<uint32_t>{2, 2, 2}));
  EXPECT_EQ(parse_tasks_per_node("4,1(x2)"), (std::vector<uint32_t>{4, 1, 1}));
  EXPECT_EQ(parse_tasks_per_node("3,2,1"), (std::vector<uint32_t>{3, 2, 1}));
  EXPECT_EQ(parse_tasks_per_node("7"), (std::vector<uint32_t>{7}));
}

TEST(TasksPerNode, RejectsGarbage) {
  for (const char* bad : {"", "x", "2(x", "2(x)", "2(3)", "2,,1", "-1", "2(x0)"}) {
    EXPECT_THROW(parse_tasks_per_node(bad), PluginError) << bad;
  }
}

// Horovod's reference: hosts in order, ranks in order within a host
// (horovod/runner/common/util/hosts.py get_host_assignments).
std::map<std::pair<uint32_t, uint32_t>, std::pair<uint32_t, uint32_t>> horovod_cross(
    const std::vector<uint32_t>& tpn) {
  std::map<uint32_t, std::vector<uint32_t>> nodes_with_local;
  for (uint32_t n = 0; n < tpn.size(); ++n) {
    for (uint32_t l = 0; l < tpn[n]; ++l) nodes_with_local[l].push_back(n);
  }
  std::map<std::pair<uint32_t, uint32_t>, std::pair<uint32_t, uint32_t>> out;
  for (auto& [l, nodes] : nodes_with_local) {
    for (uint32_t i = 0; i < nodes.size(); ++i) {
      out[{nodes[i], l}] = {i, static_cast<uint32_t>(nodes.size())};
    }
  }
  return out;
}

TEST(Identity, MatchesHorovodForEvenAndUnevenLayouts) {
  for (const auto& tpn : std::vector<std::vector<uint32_t>>{
           {2, 2, 2}, {4, 1, 1}, {1}, {3, 0 + 1, 2}, {1, 3}, {5, 5, 4, 1}}) {
    uint32_t size = 0;
    for (auto n : tpn) size += n;
    const auto ref = horovod_cross(tpn);
    uint32_t rank = 0;
    std::set<uint32_t> ranks;
    for (uint32_t n = 0; n < tpn.size(); ++n) {
      StepLayout l{size, n, static_cast<uint32_t>(tpn.size()), tpn};
      for (uint32_t local = 0; local < tpn[n]; ++local, ++rank) {
        const TaskIdentity id = compute_identity(l, rank, local, "node" + std::to_string(n + 1));
        EXPECT_EQ(id.local_size, tpn[n]);
        EXPECT_EQ(id.size, size);
        EXPECT_EQ(id.node_id, n);
        EXPECT_EQ(id.nnodes, tpn.size());
        EXPECT_EQ(std::make_pair(id.cross_rank, id.cross_size), ref.at({n, local}))
            << "node " << n << " local " << local;
        ranks.insert(id.rank);
      }
    }
    EXPECT_EQ(ranks.size(), size);
  }
}

TEST(Identity, UnevenExampleByHand) {
  // srun -N 2 -n 3: node0 runs local ranks 0,1, node1 runs local rank 0.
  StepLayout l{3, 0, 2, {2, 1}};
  EXPECT_EQ(compute_identity(l, 1, 1, "a").cross_size, 1u);
  EXPECT_EQ(compute_identity(l, 0, 0, "a").cross_size, 2u);
  l.node_id = 1;
  const TaskIdentity last = compute_identity(l, 2, 0, "b");
  EXPECT_EQ(last.cross_rank, 1u);
  EXPECT_EQ(last.cross_size, 2u);
  EXPECT_EQ(last.hostname, "b");
}

TEST(Identity, InconsistentLayoutIsAnError) {
  EXPECT_THROW(compute_identity({4, 0, 2, {2, 1}}, 0, 0, "a"), PluginError);  // sum != size
  EXPECT_THROW(compute_identity({3, 0, 3, {2, 1}}, 0, 0, "a"), PluginError);  // count != nnodes
  EXPECT_THROW(compute_identity({3, 1, 2, {2, 1}}, 2, 1, "a"), PluginError);  // local too big
  EXPECT_THROW(compute_identity({3, 2, 2, {2, 1}}, 2, 0, "a"), PluginError);  // node too big
}

}  // namespace
}  // namespace tandem::plugin
