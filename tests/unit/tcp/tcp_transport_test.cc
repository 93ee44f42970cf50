// The TCP transport between ranks-as-threads over loopback: sizes, group
// sizes, concurrent disjoint groups, deadlock-free rings, ordering, misuse;
// planned connections at set-up and the others on first use.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>
#include <utility>

#include "collectives/collectives.h"
#include "collectives/partners.h"
#include "common/errors.h"
#include "tests/unit/tcp/thread_ranks.h"
#include "transport/tcp/socket.h"
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
                         ::testing::Values(0, 1, 7, 4093, (size_t{1} << 20) + 3, size_t{64} << 20));

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
  run_ranks(8,
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
              t->sendrecv((me + 1) % n, out.data(), out.size(), (me - 1 + n) % n, in.data(),
                          in.size());
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

// Which congestion control paces by its own estimate is read from the
// socket: BBR does, reno and cubic do not. A control this kernel lacks (or
// may not be set without privilege) is left out; reno is always there.
TEST(TcpPiece, PacingIsReadFromTheSocketsCongestionControl) {
  const std::pair<const char*, bool> controls[] = {
      {"reno", false}, {"cubic", false}, {"bbr", true}};
  int tried = 0;
  for (const auto& [name, paces] : controls) {
    tcp::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_TRUE(fd.valid());
    if (::setsockopt(fd.get(), IPPROTO_TCP, TCP_CONGESTION, name, std::strlen(name)) != 0) {
      ASSERT_STRNE(name, "reno") << std::strerror(errno);
      continue;
    }
    ++tried;
    EXPECT_EQ(tcp::paces_by_estimate(fd.get()), paces) << name;
  }
  EXPECT_GE(tried, 1);
  EXPECT_FALSE(tcp::paces_by_estimate(-1));
}

// The rule: a setting wins; else a control that paces on either socket
// gives the small piece, none the large one.
TEST(TcpPiece, PieceFollowsTheSettingElseThePacing) {
  EXPECT_EQ(sendrecv_piece(0, false, false), kUnpacedPieceBytes);
  EXPECT_EQ(sendrecv_piece(0, true, false), kPacedPieceBytes);
  EXPECT_EQ(sendrecv_piece(0, false, true), kPacedPieceBytes);
  EXPECT_EQ(sendrecv_piece(0, true, true), kPacedPieceBytes);
  EXPECT_EQ(sendrecv_piece(4096, true, true), 4096u);
  EXPECT_EQ(sendrecv_piece(size_t{3} << 20, false, false), size_t{3} << 20);
  EXPECT_LT(kPacedPieceBytes, kUnpacedPieceBytes);
}

// A pairwise exchange of unequal sizes, neither a multiple of the piece,
// arrives intact whatever piece the two directions move by in step: the
// setting (a page, the paced 128 KiB, 1 MiB) and the choice by congestion
// control (0).
TEST(TcpPiece, PairwiseExchangeIsIntactForEveryPiece) {
  for (const char* piece : {"4096", "131072", "1048576", "0"}) {
    ::setenv(kPieceVariable, piece, 1);
    run_ranks(2, [&](int rank, Bootstrap& b) {
      auto t = connect_tcp(b, {0, 1}, kTimeout);
      const size_t big = (size_t{3} << 20) + 5, small = (size_t{1} << 20) + 3;
      const size_t send_bytes = rank == 0 ? big : small, recv_bytes = rank == 0 ? small : big;
      for (int round = 0; round < 3; ++round) {
        auto out = pattern(send_bytes, 10 * round + rank);
        std::vector<uint8_t> in(recv_bytes, 0xEE);
        t->sendrecv(1 - rank, out.data(), send_bytes, 1 - rank, in.data(), recv_bytes);
        EXPECT_EQ(first_difference(in, pattern(recv_bytes, 10 * round + 1 - rank)), -1)
            << "piece " << piece << ", round " << round;
      }
    });
  }
  ::unsetenv(kPieceVariable);
}

// The same in a ring (each rank sends to the next and receives from the
// previous, so the two directions of a call use different sockets), 4
// ranks, 3 MiB + 5 bytes a call, for each piece.
TEST(TcpPiece, RingIsIntactForEveryPiece) {
  const int n = 4;
  const size_t bytes = (size_t{3} << 20) + 5;
  for (const char* piece : {"4096", "131072", "1048576", "0"}) {
    ::setenv(kPieceVariable, piece, 1);
    run_ranks(n, [&](int rank, Bootstrap& b) {
      auto t = connect_tcp(b, iota_members(n), kTimeout);
      const int from = (rank + n - 1) % n;
      for (int round = 0; round < 2; ++round) {
        auto out = pattern(bytes, 10 * round + rank);
        std::vector<uint8_t> in(bytes, 0xEE);
        t->sendrecv((rank + 1) % n, out.data(), bytes, from, in.data(), bytes);
        EXPECT_EQ(first_difference(in, pattern(bytes, 10 * round + from)), -1)
            << "piece " << piece << ", round " << round;
      }
    });
  }
  ::unsetenv(kPieceVariable);
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

// Every message takes whole 64-byte lines on the wire (a 64-byte header,
// the payload, zeros to the next line), so each payload starts where its
// buffer's cache lines do in the kernel's socket pages (wire.h: with an
// 8-byte header both kernel copies ran misaligned, and slower), and
// odd sizes in between do not shift the messages after them.
TEST(TcpWire, MessagesAreWholeLinesAndOddSizesDoNotShiftTheRest) {
  const size_t sizes[] = {0, 1, 8, 63, 64, 65, 4093, (size_t{1} << 20) + 3, size_t{1} << 20};
  run_ranks(2, [&](int rank, Bootstrap& b) {
    auto t = connect_tcp(b, {0, 1}, kTimeout);
    const auto before = t->traffic();
    uint64_t lines = 0;
    for (size_t bytes : sizes) {
      auto out = pattern(bytes, static_cast<int>(bytes) + rank);
      std::vector<uint8_t> in(bytes);
      t->sendrecv(1 - rank, out.data(), bytes, 1 - rank, in.data(), bytes);
      ASSERT_EQ(first_difference(in, pattern(bytes, static_cast<int>(bytes) + 1 - rank)), -1)
          << bytes << " bytes";
      lines += 1 + (bytes + 63) / 64;
    }
    const auto after = t->traffic();
    EXPECT_EQ(after.bytes_sent - before.bytes_sent, lines * 64);
    EXPECT_EQ(after.bytes_received - before.bytes_received, lines * 64);
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
    if (rank == 0) { EXPECT_THROW(t->recv(3, &x, 1), PeerLostError); }
    b.barrier(kTimeout);
  });
  EXPECT_EQ(count_open_fds(), before);
}

// Connections: set-up opens exactly the planned pairs; a call to any other
// peer connects it first, whoever of the two gets there first, and the
// data is intact.
TEST(TcpFirstUse, SetUpOpensThePlanAndEveryOtherPairConnectsWhenUsed) {
  const int n = 11;
  run_ranks(n, [&](int rank, Bootstrap& b) {
    const std::vector<int> plan = algorithm_partners(rank, n);
    auto t = connect_tcp(b, iota_members(n), kTimeout, plan);
    EXPECT_EQ(t->traffic().connections, static_cast<int>(plan.size()));
    EXPECT_LT(plan.size(), static_cast<size_t>(n - 1));
    // The algorithms run on the plan alone.
    std::vector<float> x(3000, 1.0f);
    for (auto a : {AllreduceAlgorithm::kRecursiveDoubling, AllreduceAlgorithm::kHalvingDoubling,
                   AllreduceAlgorithm::kRing})
      allreduce(*t, x.data(), x.data(), x.size(), Reduction{TANDEM_FLOAT32, TANDEM_MAX}, a);
    EXPECT_EQ(t->traffic().connections, static_cast<int>(plan.size()));
    // Shift by shift every pair exchanges: the unplanned ones connect now,
    // both ends needing the pair in the same call.
    for (int s = 1; s < n; ++s) {
      const int to = (rank + s) % n, from = (rank + n - s) % n;
      auto out = pattern(4093, rank * 100 + to);
      std::vector<uint8_t> in(4093);
      t->sendrecv(to, out.data(), out.size(), from, in.data(), in.size());
      EXPECT_EQ(first_difference(in, pattern(4093, from * 100 + rank)), -1) << "from " << from;
    }
    EXPECT_EQ(t->traffic().connections, n - 1);
  });
}

// A rank waiting in a call on one peer answers another that connects to it:
// rank 0 sends to 2 (and must connect first) while 2 waits for 1, and 1
// waits for 0. Had rank 2 not served its listener while it waited, 0 would
// wait for 2's answer, 1 for 0 and 2 for 1, forever.
TEST(TcpFirstUse, ARankWaitingOnAnotherPeerAnswersAConnection) {
  run_ranks(3, [&](int rank, Bootstrap& b) {
    auto t = connect_tcp(b, iota_members(3), milliseconds(20000), {});
    uint8_t x = static_cast<uint8_t>(rank + 10), y = 0;
    if (rank == 0) {
      t->send(2, &x, 1);
      t->send(1, &x, 1);
    } else if (rank == 1) {
      t->recv(0, &y, 1);
      EXPECT_EQ(y, 10);
      t->send(2, &x, 1);
    } else {
      t->recv(1, &y, 1);
      EXPECT_EQ(y, 11);
      t->recv(0, &y, 1);
      EXPECT_EQ(y, 10);
    }
  });
}

// A peer that does not answer when first used: the connect times out after
// the transport's timeout and names the peer. A peer whose transport is
// gone refuses at once and is reported lost.
TEST(TcpFirstUse, ASilentPeerIsNamedAndAGoneOneIsLost) {
  run_ranks(4, [&](int rank, Bootstrap& b) {
    auto t = connect_tcp(b, iota_members(4), milliseconds(500), {});
    b.barrier(kTimeout);
    uint8_t x = 1;
    if (rank == 0) {
      // Rank 1 sits in the barrier: nobody answers the hello within 500 ms.
      try {
        t->recv(1, &x, 1);
        ADD_FAILURE() << "no error";
      } catch (const TimeoutError& e) {
        EXPECT_NE(std::string(e.what()).find("world rank 1"), std::string::npos) << e.what();
      }
    }
    if (rank == 3) t.reset();
    b.barrier(kTimeout);
    if (rank == 2) {
      // Rank 3's transport is gone, its listener with it.
      try {
        t->send(3, &x, 1);
        ADD_FAILURE() << "no error";
      } catch (const PeerLostError& e) {
        EXPECT_NE(std::string(e.what()).find("refused"), std::string::npos) << e.what();
      }
    }
    b.barrier(kTimeout);
  });
}

TEST(TcpFirstUse, PlanMustNameOtherMembers) {
  run_ranks(1, [&](int, Bootstrap& b) {
    EXPECT_THROW(connect_tcp(b, {0}, kTimeout, {1}), InvalidArgument);
  });
}

}  // namespace
}  // namespace tandem
