// The per-process-set communicator cache, with a fake communicator.
#include <gtest/gtest.h>

#include "common/errors.h"
#include "gpu/communicator_cache.h"

namespace tandem {
namespace gpu {
namespace {

struct FakeComm : DeviceComm {
  explicit FakeComm(CommSpec s) : spec(std::move(s)) {}
  void abort(const std::string& reason) override { aborted_with = reason; }
  CommSpec spec;
  std::string aborted_with;
};

UniqueId id_of(uint8_t n) {
  UniqueId id{};
  id[0] = n;
  return id;
}

class CacheTest : public ::testing::Test {
 protected:
  CommunicatorCache cache{[this](const CommSpec& spec) -> std::shared_ptr<DeviceComm> {
    ++factory_calls;
    if (fail_next) throw TimeoutError("ncclCommInitRankConfig: not every member connected");
    return std::make_shared<FakeComm>(spec);
  }};
  int factory_calls = 0;
  bool fail_next = false;
};

TEST_F(CacheTest, CreatesLazilyOnceAndWithTheRightRank) {
  cache.add(3, {6, 2, 4}, 4, id_of(1));
  EXPECT_EQ(factory_calls, 0) << "adding a set must not create its communicator";
  auto a = cache.get(3);
  auto b = cache.get(3);
  EXPECT_EQ(a, b);
  EXPECT_EQ(factory_calls, 1);
  EXPECT_EQ(cache.creations(), 1);
  auto* fake = static_cast<FakeComm*>(a.get());
  EXPECT_EQ(fake->spec.members, (std::vector<int>{2, 4, 6}));
  EXPECT_EQ(fake->spec.index, 1) << "rank 4 is the second of {2,4,6}";
  EXPECT_EQ(fake->spec.id, id_of(1));
}

TEST_F(CacheTest, SetsHaveTheirOwnCommunicators) {
  cache.add(0, {0, 1}, 0, id_of(1));
  cache.add(1, {0}, 0, id_of(2));
  EXPECT_NE(cache.get(0), cache.get(1));
  EXPECT_EQ(factory_calls, 2);
}

TEST_F(CacheTest, AnIdIsNeverUsedTwice) {
  cache.add(0, {0, 1}, 0, id_of(9));
  cache.remove(0);
  EXPECT_THROW(cache.add(1, {0, 1}, 0, id_of(9)), InvalidArgument);
  EXPECT_THROW(cache.add(0, {0, 1}, 0, id_of(9)), InvalidArgument);
  cache.add(0, {0, 1}, 0, id_of(10));  // a fresh id is fine
}

TEST_F(CacheTest, FailedCreationIsRememberedNotRetriedWithAConsumedId) {
  cache.add(0, {0, 1}, 1, id_of(1));
  fail_next = true;
  EXPECT_THROW(cache.get(0), TimeoutError);
  fail_next = false;
  try {
    cache.get(0);
    FAIL() << "the second get must fail too";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("not every member connected"), std::string::npos);
  }
  EXPECT_EQ(factory_calls, 1);
}

TEST_F(CacheTest, AbortAllAbortsLiveCommunicatorsAndFailsLaterGets) {
  cache.add(0, {0, 1}, 0, id_of(1));
  cache.add(1, {0, 1}, 0, id_of(2));
  auto live = cache.get(0);
  cache.abort_all("rank 1 (host node2) was lost: connection reset");
  EXPECT_EQ(static_cast<FakeComm*>(live.get())->aborted_with,
            "rank 1 (host node2) was lost: connection reset");
  for (int set : {0, 1}) {
    try {
      cache.get(set);
      FAIL() << "set " << set << " must fail after abort";
    } catch (const PeerLostError& e) {
      EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos);
    }
  }
  EXPECT_EQ(factory_calls, 1) << "nothing is created after an abort";
}

TEST_F(CacheTest, UnknownSetsAndNonMembersAreClearErrors) {
  EXPECT_THROW(cache.get(5), InvalidArgument);
  EXPECT_THROW(cache.add(0, {1, 2}, 0, id_of(1)), InvalidArgument);
  cache.add(0, {0}, 0, id_of(1));
  EXPECT_THROW(cache.add(0, {0}, 0, id_of(2)), InvalidArgument);
  cache.remove(0);
  EXPECT_THROW(cache.get(0), InvalidArgument);
}

}  // namespace
}  // namespace gpu
}  // namespace tandem
