// The TCP transport between ranks-as-threads over loopback: sizes, group
// sizes, concurrent disjoint groups, deadlock-free rings, ordering, misuse.
#include <gtest/gtest.h>

#include <fcntl.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "common/errors.h"
#include "tests/unit/tcp/thread_ranks.h"
#include "transport/tcp/tcp_transport.h"

namespace tandem {
namespace {

using std::chrono::milliseconds;
using test::first_difference;
using test::pattern;
using test::run_ranks;

constexpr milliseconds kTimeout{30000};

std::vector<int> iota_members(int n) {
  std::vector<int> m(n);
  for (int i = 0; i < n; ++i) m[i] = i;
  return m;
}

class PairSize : public ::testing::TestWithParam<size_t> {};

TEST_P(PairSize, BothDirectionsArriveIntact) {
  const size_t bytes = GetParam();
  run_ranks(2, [&](int rank, Bootstrap& b) {
    auto t = connect_tcp(b, {0, 1}, kTimeout);
    ASSERT_EQ(t->rank(), rank);
    ASSERT_EQ(t->size(), 2);
    const int peer = 1 - rank;
    for (int round = 0; round < 2; ++round) {
      const int sender = round;
      if (rank == sender) {
        auto data = pattern(bytes, 100 + round);
        t->send(peer, data.data(), data.size());
      } else {
        std::vector<uint8_t> got(bytes, 0xEE);
        t->recv(peer, got.data(), got.size());
        EXPECT_EQ(first_difference(got, pattern(bytes, 100 + round)), -1) << bytes << " bytes";
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Sizes, PairSize,
                         ::testing::Values(0, 1, 7, 4093, (size_t{1} << 20) + 3,
                                           size_t{64} << 20));

class GroupSize : public ::testing::TestWithParam<int> {};

// Every rank exchanges a message with every other rank, shift by shift
// (rank r sends to r+s and receives from r-s), so all pairs of the mesh carry
// data in both directions. The content names sender, receiver and shift.
TEST_P(GroupSize, EveryPairExchanges) {
  const int n = GetParam();
  run_ranks(n, [&](int rank, Bootstrap& b) {
    auto t = connect_tcp(b, iota_members(n), kTimeout);
    ASSERT_EQ(t->size(), n);
    for (size_t bytes : {size_t{1}, size_t{100003}}) {
      for (int s = 1; s < n; ++s) {
        const int to = (rank + s) % n;
        const int from = (rank - s + n) % n;
        auto out = pattern(bytes, rank * 1000 + to * 10 + s);
        std::vector<uint8_t> in(bytes);
        t->sendrecv(to, out.data(), out.size(), from, in.data(), in.size());
        EXPECT_EQ(first_difference(in, pattern(bytes, from * 1000 + rank * 10 + s)), -1)
            << "rank " << rank << " from " << from << " shift " << s;
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Sizes, GroupSize, ::testing::Range(2, 9));

// Disjoint groups set up at the same time over one world bootstrap, on two
// "nodes" of four ranks: group 0 spans both nodes (default-route address),
// groups 1 and 2 stay inside one node each (loopback).
TEST(TcpGroups, DisjointGroupsConnectAtOnce) {
  const std::vector<std::vector<int>> groups = {{0, 3, 5}, {1, 2}, {4, 6, 7}};
  const int group_of[8] = {0, 1, 1, 0, 2, 0, 2, 2};
  run_ranks(
      8,
      [&](int rank, Bootstrap& b) {
        const int g = group_of[rank];
        const auto& mine = groups[g];
        auto t = connect_tcp(b, mine, kTimeout);
        const int n = t->size();
        ASSERT_EQ(n, static_cast<int>(mine.size()));
        ASSERT_EQ(mine[t->rank()], rank);
        const int me = t->rank();
        auto out = pattern(5000, g * 100 + me);
        std::vector<uint8_t> in(5000);
        t->sendrecv((me + 1) % n, out.data(), out.size(), (me - 1 + n) % n, in.data(), in.size());
        EXPECT_EQ(first_difference(in, pattern(5000, g * 100 + (me - 1 + n) % n)), -1);
      },
      {4, 4});
}

// Every rank sends 16 MiB before it receives: with blocking sends this
// deadlocks as soon as the socket buffers are full.
TEST(TcpRing, LargeSendrecvRingDoesNotDeadlock) {
  const int n = 4;
  const size_t bytes = (size_t{16} << 20) + 5;
  run_ranks(n, [&](int rank, Bootstrap& b) {
    auto t = connect_tcp(b, iota_members(n), kTimeout);
    for (int round = 0; round < 3; ++round) {
      auto out = pattern(bytes, round * 10 + rank);
      std::vector<uint8_t> in(bytes);
      const int from = (rank + n - 1) % n;
      t->sendrecv((rank + 1) % n, out.data(), out.size(), from, in.data(), in.size());
      EXPECT_EQ(first_difference(in, pattern(bytes, round * 10 + from)), -1) << "round " << round;
    }
  });
}

// sendrecv to and from the same peer (pairwise exchange) in both directions.
TEST(TcpRing, PairwiseExchangeWithSamePeer) {
  const size_t bytes = size_t{8} << 20;
  run_ranks(2, [&](int rank, Bootstrap& b) {
    auto t = connect_tcp(b, {0, 1}, kTimeout);
    auto out = pattern(bytes, rank);
    std::vector<uint8_t> in(bytes / 2);
    // Different sizes per direction: rank 0 sends 8 MiB and gets 4 MiB.
    const size_t send_bytes = rank == 0 ? bytes : bytes / 2;
    const size_t recv_bytes = rank == 0 ? bytes / 2 : bytes;
    in.resize(recv_bytes);
    t->sendrecv(1 - rank, out.data(), send_bytes, 1 - rank, in.data(), recv_bytes);
    auto expect = pattern(bytes, 1 - rank);
    expect.resize(recv_bytes);
    EXPECT_EQ(first_difference(in, expect), -1);
  });
}

// Messages keep their order and boundaries, sizes varying from 0 up.
TEST(TcpOrder, ManyMessagesArriveInOrder) {
  run_ranks(2, [&](int rank, Bootstrap& b) {
    auto t = connect_tcp(b, {0, 1}, kTimeout);
    for (int i = 0; i < 2000; ++i) {
      const size_t bytes = static_cast<size_t>(i % 37) * 13;
      if (rank == 0) {
        auto out = pattern(bytes, i);
        t->send(1, out.data(), out.size());
      } else {
        std::vector<uint8_t> in(bytes);
        t->recv(0, in.data(), in.size());
        ASSERT_EQ(first_difference(in, pattern(bytes, i)), -1) << "message " << i;
      }
    }
  });
}

// Two threads of one rank use two different peers at the same time.
TEST(TcpConcurrency, TwoThreadsTwoPeers) {
  const size_t bytes = size_t{8} << 20;
  run_ranks(3, [&](int rank, Bootstrap& b) {
    auto t = connect_tcp(b, {0, 1, 2}, kTimeout);
    if (rank == 0) {
      std::vector<uint8_t> in1(bytes), in2(bytes);
      std::thread a([&] { t->recv(1, in1.data(), bytes); });
      t->recv(2, in2.data(), bytes);
      a.join();
      EXPECT_EQ(first_difference(in1, pattern(bytes, 1)), -1);
      EXPECT_EQ(first_difference(in2, pattern(bytes, 2)), -1);
    } else {
      auto out = pattern(bytes, rank);
      t->send(0, out.data(), bytes);
    }
  });
}

TEST(TcpMisuse, GroupOfOneNeedsNoPeer) {
  run_ranks(1, [&](int, Bootstrap& b) {
    auto t = connect_tcp(b, {0}, kTimeout);
    EXPECT_EQ(t->size(), 1);
    EXPECT_EQ(t->rank(), 0);
    uint8_t x = 0;
    EXPECT_THROW(t->send(0, &x, 1), InvalidArgument);
  });
}

TEST(TcpMisuse, BadMembersAreRejectedBeforeAnyExchange) {
  run_ranks(1, [&](int, Bootstrap& b) {
    EXPECT_THROW(connect_tcp(b, {}, kTimeout), InvalidArgument);
    EXPECT_THROW(connect_tcp(b, {0, 1}, kTimeout), InvalidArgument);
    EXPECT_THROW(connect_tcp(b, {0, 0}, kTimeout), InvalidArgument);
  });
  run_ranks(2, [&](int rank, Bootstrap& b) {
    if (rank == 0) {
      EXPECT_THROW(connect_tcp(b, {1}, kTimeout), InvalidArgument);
    } else {
      EXPECT_THROW(connect_tcp(b, {1, 0}, kTimeout), InvalidArgument);
    }
  });
}

TEST(TcpMisuse, BadPeerOrBufferIsInvalidArgument) {
  run_ranks(2, [&](int rank, Bootstrap& b) {
    auto t = connect_tcp(b, {0, 1}, kTimeout);
    uint8_t x = 0;
    EXPECT_THROW(t->send(rank, &x, 1), InvalidArgument);
    EXPECT_THROW(t->send(2, &x, 1), InvalidArgument);
    EXPECT_THROW(t->recv(-1, &x, 1), InvalidArgument);
    EXPECT_THROW(t->send(1 - rank, nullptr, 1), InvalidArgument);
    EXPECT_THROW(t->sendrecv(1 - rank, &x, 1, 1 - rank, nullptr, 4), InvalidArgument);
    // The transport still works after rejected calls.
    uint8_t out = static_cast<uint8_t>(rank + 40), in = 0;
    t->sendrecv(1 - rank, &out, 1, 1 - rank, &in, 1);
    EXPECT_EQ(in, 41 - rank);
  });
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

int count_open_fds() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)e;
    ++n;
  }
  return n;
}

// Every socket of a transport is close-on-exec (a script that forks a
// helper must not keep the job's connections open), and destroying the
// transports, also after a failure, leaves no descriptor behind.
TEST(TcpResources, SocketsAreCloseOnExecAndNothingLeaks) {
  const int before = count_open_fds();
  run_ranks(4, [&](int rank, Bootstrap& b) {
    auto t = connect_tcp(b, iota_members(4), kTimeout);
    b.barrier(kTimeout);
    if (rank == 0) {
      int sockets = 0;
      for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        const auto target = std::filesystem::read_symlink(e.path(), ec).string();
        if (ec || target.rfind("socket:", 0) != 0) continue;
        const int fd = std::stoi(e.path().filename().string());
        ++sockets;
        EXPECT_TRUE(::fcntl(fd, F_GETFD) & FD_CLOEXEC) << "fd " << fd << " " << target;
      }
      EXPECT_GE(sockets, 12);  // 4 ranks x 3 peers
    }
    b.barrier(kTimeout);
    if (rank == 3) t.reset();
    uint8_t x = 0;
    if (rank == 0) {
      EXPECT_THROW(t->recv(3, &x, 1), PeerLostError);
    }
    b.barrier(kTimeout);
  });
  EXPECT_EQ(count_open_fds(), before);
}

}  // namespace
}  // namespace tandem
