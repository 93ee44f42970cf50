// The rules that pick the next generation of an elastic job
// (engine/elastic/selection.h): node order, probe failures, silent
// candidates, the maximum size.
#include "elastic/selection.h"

#include <gtest/gtest.h>

namespace tandem::elastic {
namespace {

using Pairs = std::vector<std::pair<uint32_t, uint32_t>>;
using Ids = std::vector<uint32_t>;

// Members 1-6: two per node on n1, n2, n3, in priority order.
std::vector<Candidate> six() {
  return {{1, "n1"}, {2, "n1"}, {3, "n2"}, {4, "n2"}, {5, "n3"}, {6, "n3"}};
}

TEST(Selection, EveryoneReachableKeepsEveryoneInOrder) {
  Selection s = select_members(six(), {}, {}, 100);
  EXPECT_EQ(s.kept, (Ids{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(s.excluded_nodes.empty());
  EXPECT_TRUE(s.deferred.empty());
}

TEST(Selection, ACutLinkDropsTheNodeOfHigherRanks) {
  // n1 and n2 cannot reach each other (reported from both sides); n3 reaches both.
  Selection s = select_members(six(), Pairs{{1, 3}, {3, 1}, {2, 3}, {4, 1}}, {}, 100);
  EXPECT_EQ(s.kept, (Ids{1, 2, 5, 6}));
  EXPECT_EQ(s.excluded_nodes, std::vector<std::string>{"n2"});
}

TEST(Selection, AOneSidedReportIsEnough) {
  Selection s = select_members(six(), Pairs{{5, 2}}, {}, 100);
  EXPECT_EQ(s.kept, (Ids{1, 2, 3, 4}));
  EXPECT_EQ(s.excluded_nodes, std::vector<std::string>{"n3"});
}

TEST(Selection, AFailureInsideANodeExcludesNothing) {
  Selection s = select_members(six(), Pairs{{1, 2}}, {}, 100);
  EXPECT_EQ(s.kept, (Ids{1, 2, 3, 4, 5, 6}));
}

TEST(Selection, ASilentCandidateTakesItsNodeOut) {
  Selection s = select_members(six(), {}, {4}, 100);
  EXPECT_EQ(s.kept, (Ids{1, 2, 5, 6}));
  EXPECT_EQ(s.excluded_nodes, std::vector<std::string>{"n2"});
}

TEST(Selection, TheFirstNodeIsKeptEvenWhenCutFromAll) {
  // Rank 0's node is the reference: the others are judged against it.
  Selection s = select_members(six(), Pairs{{1, 3}, {1, 5}}, {}, 100);
  EXPECT_EQ(s.kept, (Ids{1, 2}));
  EXPECT_EQ(s.excluded_nodes, (std::vector<std::string>{"n2", "n3"}));
}

TEST(Selection, PastTheMaximumTheLastWait) {
  Selection s = select_members(six(), {}, {}, 4);
  EXPECT_EQ(s.kept, (Ids{1, 2, 3, 4}));
  EXPECT_EQ(s.deferred, (Ids{5, 6}));
}

TEST(Selection, UnknownMembersInReportsAreIgnored) {
  Selection s = select_members(six(), Pairs{{1, 99}, {42, 3}}, {77}, 100);
  EXPECT_EQ(s.kept, (Ids{1, 2, 3, 4, 5, 6}));
}

TEST(Selection, InterleavedNodesKeepCandidateOrder) {
  std::vector<Candidate> c = {{1, "a"}, {2, "b"}, {3, "a"}, {4, "c"}, {5, "b"}};
  Selection s = select_members(c, Pairs{{4, 1}}, {}, 100);
  EXPECT_EQ(s.kept, (Ids{1, 2, 3, 5}));
  EXPECT_EQ(s.excluded_nodes, std::vector<std::string>{"c"});
}

TEST(ProbeTargets, TheFirstCandidateOfEveryOtherNode) {
  EXPECT_EQ(probe_targets(six(), 4), (Ids{1, 5}));
  EXPECT_EQ(probe_targets(six(), 1), (Ids{3, 5}));
  EXPECT_EQ(probe_targets({{1, "a"}, {2, "a"}}, 2), Ids{});
}

}  // namespace
}  // namespace tandem::elastic
