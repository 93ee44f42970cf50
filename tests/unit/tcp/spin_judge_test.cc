// SpinJudge (engine/transport/tcp/spin_judge.h): when a transport stops
// spinning. Deterministic: the judge is given the sleeps, no clock runs.
#include "transport/tcp/spin_judge.h"

#include <gtest/gtest.h>

#include <chrono>

namespace tandem {
namespace tcp {
namespace {

using std::chrono::microseconds;

constexpr microseconds kShort{5};   // the answer came right after the spin gave up
constexpr microseconds kLong{500};  // a real wait

TEST(SpinJudge, OneNearMissIsACoincidenceAndPausesNothing) {
  SpinJudge judge;
  EXPECT_EQ(judge.gave_up(kShort), 0);
  judge.caught();
  EXPECT_EQ(judge.gave_up(kShort), 0);
  EXPECT_EQ(judge.gave_up(kShort), 0);
  judge.caught();
  EXPECT_EQ(judge.gave_up(kShort), 0);
}

TEST(SpinJudge, NearMissesInARowPauseAndThePauseDoublesToOneSecond) {
  SpinJudge judge;
  for (int i = 1; i < SpinJudge::kNearMisses; ++i) EXPECT_EQ(judge.gave_up(kShort), 0) << i;
  EXPECT_EQ(judge.gave_up(kShort), 10);
  // Past the first pause every near miss without a caught spin pauses again.
  EXPECT_EQ(judge.gave_up(kShort), 20);
  EXPECT_EQ(judge.gave_up(kShort), 40);
  for (int i = 0; i < 10; ++i) judge.gave_up(kShort);
  EXPECT_EQ(judge.gave_up(kShort), 1000);
}

TEST(SpinJudge, RealWaitsNeitherCountNorClear) {
  SpinJudge judge;
  EXPECT_EQ(judge.gave_up(kShort), 0);
  EXPECT_EQ(judge.gave_up(kLong), 0);
  EXPECT_EQ(judge.gave_up(kShort), 0);
  EXPECT_EQ(judge.gave_up(kLong), 0);
  // The third near miss since the last caught spin.
  EXPECT_EQ(judge.gave_up(kShort), 10);
  EXPECT_EQ(judge.gave_up(SpinJudge::kNearMiss + microseconds(1)), 0);
}

// The boundary is inclusive; gave_up and the transport's near-miss counter
// both ask near_miss, so they cannot disagree about a sleep.
TEST(SpinJudge, ANearMissIsASleepUpToTheBoundInclusive) {
  EXPECT_TRUE(SpinJudge::near_miss(kShort));
  EXPECT_TRUE(SpinJudge::near_miss(SpinJudge::kNearMiss));
  EXPECT_FALSE(SpinJudge::near_miss(SpinJudge::kNearMiss + std::chrono::nanoseconds(1)));
  EXPECT_FALSE(SpinJudge::near_miss(kLong));
}

TEST(SpinJudge, ACaughtSpinStartsOver) {
  SpinJudge judge;
  for (int i = 0; i < SpinJudge::kNearMisses + 2; ++i) judge.gave_up(kShort);  // paused at 40 ms
  judge.caught();
  for (int i = 1; i < SpinJudge::kNearMisses; ++i) EXPECT_EQ(judge.gave_up(kShort), 0) << i;
  EXPECT_EQ(judge.gave_up(kShort), 10);
}

}  // namespace
}  // namespace tcp
}  // namespace tandem
