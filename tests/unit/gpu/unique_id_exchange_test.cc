// The NCCL unique id's trip through the bootstrap, ranks as threads over a
// MemoryWorld, with a fake id source standing in for ncclGetUniqueId.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>

#include "bootstrap/memory_bootstrap.h"
#include "common/errors.h"
#include "gpu/unique_id_exchange.h"

namespace tandem {
namespace gpu {
namespace {

using std::chrono::milliseconds;

// Ids made from (creating rank, sequence), so a test sees who made which.
class CountingSource : public UniqueIdSource {
 public:
  explicit CountingSource(int rank) : rank_(rank) {}
  UniqueId create() override {
    UniqueId id{};
    id[0] = static_cast<uint8_t>(rank_);
    id[1] = static_cast<uint8_t>(++calls);
    id[127] = 0xAB;
    return id;
  }
  int calls = 0;

 private:
  int rank_;
};

class FailingSource : public UniqueIdSource {
 public:
  UniqueId create() override { throw std::runtime_error("ncclGetUniqueId: no network interface"); }
};

// Runs fn(rank) on `size` threads; returns each rank's exception, if any.
std::vector<std::exception_ptr> run_ranks(int size, const std::function<void(int)>& fn) {
  std::vector<std::exception_ptr> errors(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) { errors[r] = std::current_exception(); }
    });
  for (auto& t : threads) t.join();
  return errors;
}

std::string message_of(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) { return ex.what(); }
  return "";
}

TEST(UniqueIdExchange, WorldSetGetsOneIdFromRankZero) {
  for (int size : {1, 2, 5}) {
    auto world = std::make_shared<MemoryWorld>(size);
    std::vector<std::optional<UniqueId>> got(size);
    std::vector<int> calls(size);
    std::vector<int> all;
    for (int r = 0; r < size; ++r) all.push_back(r);
    auto errors = run_ranks(size, [&](int r) {
      MemoryBootstrap boot(world, r);
      CountingSource source(r);
      got[r] = exchange_unique_id(boot, 0, all, source, milliseconds(10000));
      calls[r] = source.calls;
    });
    for (int r = 0; r < size; ++r) {
      ASSERT_FALSE(errors[r]) << message_of(errors[r]);
      ASSERT_TRUE(got[r].has_value()) << "rank " << r;
      EXPECT_EQ(*got[r], *got[0]) << "rank " << r;
      EXPECT_EQ(calls[r], r == 0 ? 1 : 0) << "only the first member creates the id";
    }
    EXPECT_EQ((*got[0])[0], 0);
    EXPECT_EQ((*got[0])[127], 0xAB);
  }
}

TEST(UniqueIdExchange, SubsetRootIsItsLowestRankAndOthersGetNothing) {
  auto world = std::make_shared<MemoryWorld>(4);
  std::vector<std::optional<UniqueId>> got(4);
  auto errors = run_ranks(4, [&](int r) {
    MemoryBootstrap boot(world, r);
    CountingSource source(r);
    got[r] = exchange_unique_id(boot, 7, {3, 1}, source, milliseconds(10000));
  });
  for (int r = 0; r < 4; ++r) ASSERT_FALSE(errors[r]) << message_of(errors[r]);
  EXPECT_FALSE(got[0].has_value());
  EXPECT_FALSE(got[2].has_value());
  ASSERT_TRUE(got[1].has_value());
  ASSERT_TRUE(got[3].has_value());
  EXPECT_EQ(*got[1], *got[3]);
  EXPECT_EQ((*got[1])[0], 1) << "rank 1, the set's lowest rank, must have created it";
}

TEST(UniqueIdExchange, EverySetGetsAFreshId) {
  auto world = std::make_shared<MemoryWorld>(3);
  std::vector<std::vector<UniqueId>> got(3);
  auto errors = run_ranks(3, [&](int r) {
    MemoryBootstrap boot(world, r);
    CountingSource source(r);
    for (int set = 0; set < 4; ++set)
      got[r].push_back(*exchange_unique_id(boot, set, {0, 1, 2}, source, milliseconds(10000)));
  });
  for (int r = 0; r < 3; ++r) ASSERT_FALSE(errors[r]) << message_of(errors[r]);
  for (int a = 0; a < 4; ++a) {
    for (int r = 1; r < 3; ++r) EXPECT_EQ(got[r][a], got[0][a]);
    for (int b = a + 1; b < 4; ++b) EXPECT_NE(got[0][a], got[0][b]) << "sets " << a << ", " << b;
  }
}

TEST(UniqueIdExchange, RootFailureReachesEveryMemberWithItsReason) {
  auto world = std::make_shared<MemoryWorld>(3);
  auto errors = run_ranks(3, [&](int r) {
    MemoryBootstrap boot(world, r);
    FailingSource source;
    exchange_unique_id(boot, 2, {0, 1, 2}, source, milliseconds(10000));
  });
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(errors[r]) << "rank " << r << " must fail";
    EXPECT_THROW(std::rethrow_exception(errors[r]), BootstrapError);
    const std::string msg = message_of(errors[r]);
    EXPECT_NE(msg.find("process set 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank 0 could not create it"), std::string::npos) << msg;
    EXPECT_NE(msg.find("no network interface"), std::string::npos) << msg;
  }
}

TEST(UniqueIdExchange, IdThatNeverArrivesIsATimeoutNamingTheRoot) {
  auto world = std::make_shared<MemoryWorld>(3);
  // Rank 0, the root, never takes part: ranks 1 and 2 must give up.
  auto errors = run_ranks(3, [&](int r) {
    if (r == 0) return;
    MemoryBootstrap boot(world, r);
    CountingSource source(r);
    exchange_unique_id(boot, 0, {0, 1, 2}, source, milliseconds(200));
  });
  for (int r = 1; r < 3; ++r) {
    ASSERT_TRUE(errors[r]);
    EXPECT_THROW(std::rethrow_exception(errors[r]), TimeoutError);
    const std::string msg = message_of(errors[r]);
    EXPECT_NE(msg.find("rank 0 (the set's first member"), std::string::npos) << msg;
    EXPECT_NE(msg.find("200 ms"), std::string::npos) << msg;
  }
}

TEST(UniqueIdExchange, RanksAddingDifferentSetsIsAMismatch) {
  auto world = std::make_shared<MemoryWorld>(2);
  auto errors = run_ranks(2, [&](int r) {
    MemoryBootstrap boot(world, r);
    CountingSource source(r);
    exchange_unique_id(boot, r == 0 ? 4 : 5, {0, 1}, source, milliseconds(10000));
  });
  ASSERT_FALSE(errors[0]) << message_of(errors[0]);  // the root checks against itself
  ASSERT_TRUE(errors[1]);
  EXPECT_THROW(std::rethrow_exception(errors[1]), MismatchError);
  EXPECT_NE(message_of(errors[1]).find("adding process set 4"), std::string::npos);
}

TEST(UniqueIdExchange, BadMemberListsAreRejectedBeforeAnyExchange) {
  auto world = std::make_shared<MemoryWorld>(2);
  MemoryBootstrap boot(world, 0);
  CountingSource source(0);
  EXPECT_THROW(exchange_unique_id(boot, 0, {}, source, milliseconds(100)), InvalidArgument);
  EXPECT_THROW(exchange_unique_id(boot, 0, {0, 2}, source, milliseconds(100)), InvalidArgument);
  EXPECT_THROW(exchange_unique_id(boot, 0, {1, 1}, source, milliseconds(100)), InvalidArgument);
  EXPECT_EQ(source.calls, 0);
}

}  // namespace
}  // namespace gpu
}  // namespace tandem
