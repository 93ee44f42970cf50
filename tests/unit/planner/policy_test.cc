#include "policy.h"

#include <gtest/gtest.h>

#include "errors.h"

namespace tandem::planner {
namespace {

TEST(Policy, DefaultsAreClosestAllVisibleNoMembind) {
  Policy p;
  EXPECT_EQ(p.kind, PolicyKind::Closest);
  EXPECT_EQ(p.visible, Visible::All);
  EXPECT_FALSE(p.membind);
  EXPECT_TRUE(p.nics.empty());
}

TEST(Policy, ParsesEveryKey) {
  Policy p;
  parse_policy_value(p, "policy", "none");
  parse_policy_value(p, "visible", "own");
  parse_policy_value(p, "membind", "on");
  parse_policy_value(p, "nics", "mlx5_0,eth1");
  EXPECT_EQ(p.kind, PolicyKind::None);
  EXPECT_EQ(p.visible, Visible::Own);
  EXPECT_TRUE(p.membind);
  EXPECT_EQ(p.nics, (std::vector<std::string>{"mlx5_0", "eth1"}));
  parse_policy_value(p, "nics", "any");
  EXPECT_TRUE(p.nics.empty());
}

TEST(Policy, BadValueNamesKeyValueAndAllowedValues) {
  Policy p;
  try {
    parse_policy_value(p, "visible", "some");
    FAIL();
  } catch (const PlanError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("'visible'"), std::string::npos) << m;
    EXPECT_NE(m.find("'some'"), std::string::npos) << m;
    EXPECT_NE(m.find("'own'"), std::string::npos) << m;
  }
  EXPECT_THROW(parse_policy_value(p, "membind", "yes"), PlanError);
  EXPECT_THROW(parse_policy_value(p, "nics", "a,,b"), PlanError);
  EXPECT_THROW(parse_policy_value(p, "colour", "red"), PlanError);
}

}  // namespace
}  // namespace tandem::planner
