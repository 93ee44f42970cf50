#include "cpu_set.h"

#include <gtest/gtest.h>

#include "errors.h"

namespace tandem::planner {
namespace {

TEST(CpuSet, ParsesRangesAndSinglesSortedAndUnique) {
  CpuSet set = CpuSet::parse("8,0-3,2,10-11", "test");
  EXPECT_EQ(set.cpus(), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(set.to_string(), "0-3,8,10-11");
}

TEST(CpuSet, FormatsSingletonsAndEmpty) {
  EXPECT_EQ(CpuSet({5}).to_string(), "5");
  EXPECT_EQ(CpuSet({1, 3}).to_string(), "1,3");
  EXPECT_EQ(CpuSet().to_string(), "");
}

TEST(CpuSet, RejectsMalformedListsNamingTheOption) {
  for (const char* bad : {"", "a", "1-", "-1", "3-1", "1,,2", "1.5", "99999999"}) {
    try {
      CpuSet::parse(bad, "--cpus");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const PlanError& e) {
      EXPECT_NE(std::string(e.what()).find("--cpus"), std::string::npos) << e.what();
    }
  }
}

TEST(CpuSet, IntersectAndUnite) {
  CpuSet a({0, 1, 2, 3}), b({2, 3, 4});
  EXPECT_EQ(a.intersect(b).to_string(), "2-3");
  EXPECT_EQ(a.unite(b).to_string(), "0-4");
}

}  // namespace
}  // namespace tandem::planner
