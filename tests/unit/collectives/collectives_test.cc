// Broadcast, allgather(v), alltoall(v), reducescatter and barrier on every
// layout, with counts 0, 1, 7, 1023 and one larger than a pipeline step.
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/errors.h"
#include "thread_world.h"

namespace tandem {
namespace testing {
namespace {

const size_t kCounts[] = {0, 1, 7, 1023, 5000};

// A value that names its origin: rank, destination and index.
int32_t tag(int from, int to, size_t i) {
  return from * 1000003 + to * 10007 + static_cast<int32_t>(i);
}

class Collectives : public ::testing::TestWithParam<Layout> {};

TEST_P(Collectives, Broadcast) {
  const Layout l = GetParam();
  run_layout(l, [](Communicator& c) {
    const int n = c.identity().size, me = c.identity().rank;
    for (size_t count : kCounts) {
      for (int root = 0; root < n; ++root) {
        std::vector<int64_t> buf(count, -1);
        if (me == root)
          for (size_t i = 0; i < count; ++i) buf[i] = tag(root, 0, i);
        c.broadcast(buf.data(), count, TANDEM_INT64, root);
        for (size_t i = 0; i < count; ++i)
          ASSERT_EQ(buf[i], tag(root, 0, i)) << "root " << root << " count " << count;
      }
    }
  });
}

TEST_P(Collectives, AllgatherAndAllgatherv) {
  const Layout l = GetParam();
  run_layout(l, [](Communicator& c) {
    const int n = c.identity().size, me = c.identity().rank;
    for (size_t count : kCounts) {
      std::vector<int32_t> send(count), recv(count * n, -1);
      for (size_t i = 0; i < count; ++i) send[i] = tag(me, 0, i);
      c.allgather(send.data(), count, recv.data(), TANDEM_INT32);
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < count; ++i) ASSERT_EQ(recv[r * count + i], tag(r, 0, i));
      // Uneven, with some ranks contributing nothing.
      std::vector<size_t> counts(n);
      size_t total = 0;
      for (int r = 0; r < n; ++r) total += counts[r] = (r % 3 == 1) ? 0 : count + r;
      std::vector<int32_t> vs(counts[me]), vr(total, -1);
      for (size_t i = 0; i < counts[me]; ++i) vs[i] = tag(me, 1, i);
      c.allgatherv(vs.data(), counts[me], vr.data(), counts, TANDEM_INT32);
      size_t at = 0;
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < counts[r]; ++i)
          ASSERT_EQ(vr[at++], tag(r, 1, i)) << "block of rank " << r;
    }
  });
}

TEST_P(Collectives, AlltoallAndAlltoallv) {
  const Layout l = GetParam();
  run_layout(l, [](Communicator& c) {
    const int n = c.identity().size, me = c.identity().rank;
    for (size_t count : kCounts) {
      std::vector<int32_t> send(count * n), recv(count * n, -1);
      for (int to = 0; to < n; ++to)
        for (size_t i = 0; i < count; ++i) send[to * count + i] = tag(me, to, i);
      c.alltoall(send.data(), recv.data(), count, TANDEM_INT32);
      for (int from = 0; from < n; ++from)
        for (size_t i = 0; i < count; ++i) ASSERT_EQ(recv[from * count + i], tag(from, me, i));
      // Rank a sends (count + a + 2b) % (count + 3) elements to rank b.
      auto amount = [&](int a, int b) { return (count + a + 2 * b) % (count + 3); };
      std::vector<size_t> sc(n), rc(n);
      size_t st = 0, rt = 0;
      for (int r = 0; r < n; ++r) {
        st += sc[r] = amount(me, r);
        rt += rc[r] = amount(r, me);
      }
      std::vector<int32_t> vs(st), vr(rt, -1);
      size_t at = 0;
      for (int to = 0; to < n; ++to)
        for (size_t i = 0; i < sc[to]; ++i) vs[at++] = tag(me, to, i);
      c.alltoallv(vs.data(), sc, vr.data(), rc, TANDEM_INT32);
      at = 0;
      for (int from = 0; from < n; ++from)
        for (size_t i = 0; i < rc[from]; ++i)
          ASSERT_EQ(vr[at++], tag(from, me, i)) << "from " << from;
    }
  });
}

TEST_P(Collectives, Reducescatter) {
  const Layout l = GetParam();
  run_layout(l, [](Communicator& c) {
    const int n = c.identity().size, me = c.identity().rank;
    for (size_t count : kCounts) {
      std::vector<size_t> counts(n);
      size_t total = 0;
      for (int r = 0; r < n; ++r) total += counts[r] = count + (r == 1 ? 3 : 0);
      std::vector<double> send(total), recv(counts[me] + 1, -7);
      for (size_t i = 0; i < total; ++i) send[i] = static_cast<double>((me + 1) * (i % 11));
      c.reducescatter(send.data(), recv.data(), counts, TANDEM_FLOAT64, TANDEM_SUM);
      size_t lo = 0;
      for (int r = 0; r < me; ++r) lo += counts[r];
      const double ranks = n * (n + 1) / 2.0;
      for (size_t i = 0; i < counts[me]; ++i)
        ASSERT_EQ(recv[i], ranks * ((lo + i) % 11)) << "element " << i;
      EXPECT_EQ(recv[counts[me]], -7) << "wrote past this rank's block";
      std::vector<int32_t> is(total), ir(counts[me]);
      for (size_t i = 0; i < total; ++i) is[i] = static_cast<int32_t>((me * 5 + i) % 13);
      c.reducescatter(is.data(), ir.data(), counts, TANDEM_INT32, TANDEM_MAX);
      for (size_t i = 0; i < counts[me]; ++i) {
        int32_t want = 0;
        for (int r = 0; r < n; ++r)
          want = std::max<int32_t>(want, static_cast<int32_t>((r * 5 + lo + i) % 13));
        ASSERT_EQ(ir[i], want);
      }
    }
  });
}

// A barrier must hold back every rank until the last one arrives: each rank
// bumps a shared counter before the barrier and reads it after.
TEST_P(Collectives, Barrier) {
  const Layout l = GetParam();
  std::atomic<int> arrived{0};
  run_layout(l, [&](Communicator& c) {
    for (int round = 1; round <= 20; ++round) {
      arrived.fetch_add(1);
      c.barrier();
      EXPECT_GE(arrived.load(), round * c.identity().size);
      c.barrier();
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Layouts, Collectives, ::testing::ValuesIn(all_layouts()),
                         [](const auto& info) { return info.param.name(); });

// Broadcast and allgather across nodes are hierarchical: shared memory inside
// a node, transports only between nodes. A flat implementation would connect
// a transport over every rank (pairs on one node over loopback TCP in a real
// job); this records every group that gets connected and checks none does.
TEST(Collectives, BroadcastAndAllgatherAcrossNodesConnectNoWorldTransport) {
  for (const std::vector<int>& per_node : {std::vector<int>{3, 3}, std::vector<int>{3, 1}}) {
    int size = 0;
    for (int k : per_node) size += k;
    auto world = std::make_shared<MemoryWorld>(size, per_node);
    auto net = make_memory_network();
    std::mutex mu;
    std::vector<size_t> groups;  // member count of every connect
    std::vector<std::thread> threads;
    std::vector<std::string> errors(size);
    for (int r = 0; r < size; ++r) {
      threads.emplace_back([&, r] {
        try {
          auto connect = [&](Bootstrap& b, const std::vector<int>& m, std::chrono::milliseconds t,
                             const std::vector<int>&) {
            {
              std::lock_guard<std::mutex> lock(mu);
              groups.push_back(m.size());
            }
            return connect_memory(net, b, m, t);
          };
          Communicator c(std::make_unique<MemoryBootstrap>(world, r), connect, small_options());
          std::vector<int64_t> buf(3000, c.identity().rank == size - 1 ? 7 : 0);
          c.broadcast(buf.data(), buf.size(), TANDEM_INT64, size - 1);
          EXPECT_EQ(buf[2999], 7);
          std::vector<int32_t> all(size);
          const int32_t mine = c.identity().rank * 10;
          c.allgather(&mine, 1, all.data(), TANDEM_INT32);
          for (int k = 0; k < size; ++k) EXPECT_EQ(all[k], k * 10);
        } catch (const std::exception& e) { errors[r] = e.what(); }
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < size; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
    for (size_t g : groups)
      EXPECT_LT(g, static_cast<size_t>(size)) << "a transport over every rank was connected";
    EXPECT_FALSE(groups.empty()) << "no transport between the nodes was connected";
  }
}

TEST(Collectives, BadArguments) {
  run_world(3, {}, [](Communicator& c) {
    int32_t x[9] = {};
    EXPECT_THROW(c.broadcast(x, 1, TANDEM_INT32, 3), InvalidArgument);
    EXPECT_THROW(c.broadcast(x, 1, TANDEM_INT32, -1), InvalidArgument);
    EXPECT_THROW(c.broadcast(nullptr, 1, TANDEM_INT32, 0), InvalidArgument);
    EXPECT_THROW(c.allgatherv(x, 2, x, {1, 1, 1}, TANDEM_INT32), InvalidArgument);
    EXPECT_THROW(c.allgatherv(x, 1, x, {1, 1}, TANDEM_INT32), InvalidArgument);
    EXPECT_THROW(c.alltoallv(x, {1, 1}, x + 4, {1, 1, 1}, TANDEM_INT32), InvalidArgument);
    EXPECT_THROW(c.alltoall(x, x, 1, TANDEM_INT32), InvalidArgument);  // same buffer
    EXPECT_THROW(c.reducescatter(x, x, {1, 1, 1}, TANDEM_BOOL, TANDEM_AVERAGE), InvalidArgument);
    EXPECT_THROW(c.allgather(x, 1, x, static_cast<tandem_dtype_t>(-1)), InvalidArgument);
    c.barrier();  // still usable
  });
}

}  // namespace
}  // namespace testing
}  // namespace tandem
