// Failures between ranks-as-threads: a peer that goes away, a peer that stays
// silent, abort() from another thread, and ranks that disagree on a size.
// (Forked processes killed and stopped by signals: tcp_fork_test.cc.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "common/errors.h"
#include "tests/unit/tcp/thread_ranks.h"
#include "transport/tcp/tcp_transport.h"

namespace tandem {
namespace {

using std::chrono::milliseconds;
using test::run_ranks;
using ::testing::HasSubstr;

// A latch the test threads use to keep a peer alive (or silent) until the
// other side has seen what it must see.
struct Latch {
  std::promise<void> p;
  std::shared_future<void> f = p.get_future().share();
  void open() { p.set_value(); }
  void wait() { f.wait(); }
};

TEST(TcpFailure, ClosedPeerFailsPendingRecvAndSendWithPeerLost) {
  for (const size_t bytes : {size_t{16}, size_t{64} << 20}) {
    run_ranks(2, [&](int rank, Bootstrap& b) {
      auto t = connect_tcp(b, {0, 1}, milliseconds(60000));
      b.barrier(milliseconds(10000));
      if (rank == 1) {
        t.reset();  // closes every socket of rank 1, as a process exit would
        return;
      }
      std::vector<uint8_t> buf(bytes);
      try {
        t->recv(1, buf.data(), bytes);
        ADD_FAILURE() << "recv from a closed peer returned";
      } catch (const PeerLostError& e) {
        EXPECT_THAT(e.what(), HasSubstr("rank 1 (world rank 1)"));
      }
      // Sticky: later calls fail the same way at once.
      EXPECT_THROW(t->send(1, buf.data(), bytes), PeerLostError);
    });
  }
}

TEST(TcpFailure, LargeSendToClosedPeerIsPeerLost) {
  const size_t bytes = size_t{64} << 20;
  run_ranks(2, [&](int rank, Bootstrap& b) {
    auto t = connect_tcp(b, {0, 1}, milliseconds(60000));
    b.barrier(milliseconds(10000));
    if (rank == 1) {
      t.reset();
      return;
    }
    std::vector<uint8_t> buf(bytes);
    EXPECT_THROW(t->send(1, buf.data(), bytes), PeerLostError);
  });
}

// Rank 1 is alive but never answers: rank 0's recv and its large send (which
// cannot fit into socket buffers) both end with TimeoutError naming it.
TEST(TcpFailure, SilentPeerTimesOut) {
  Latch done;
  run_ranks(2, [&](int rank, Bootstrap& b) {
    auto t = connect_tcp(b, {0, 1}, milliseconds(300));
    if (rank == 1) {
      done.wait();
      return;
    }
    std::vector<uint8_t> buf(size_t{64} << 20);
    try {
      t->recv(1, buf.data(), 8);
      ADD_FAILURE() << "recv from a silent peer returned";
    } catch (const TimeoutError& e) {
      EXPECT_THAT(e.what(), HasSubstr("rank 1 (world rank 1)"));
      EXPECT_THAT(e.what(), HasSubstr("TANDEM_TIMEOUT"));
    }
    done.open();
  });
  Latch done2;
  run_ranks(2, [&](int rank, Bootstrap& b) {
    auto t = connect_tcp(b, {0, 1}, milliseconds(300));
    if (rank == 1) {
      done2.wait();
      return;
    }
    std::vector<uint8_t> buf(size_t{64} << 20);
    EXPECT_THROW(t->send(1, buf.data(), buf.size()), TimeoutError);
    done2.open();
  });
}

// abort() from another thread ends a pending recv at once (the timeout is a
// minute), later calls fail too, and the peer, whose sockets were shut down,
// learns it with PeerLostError instead of waiting for its own timeout.
TEST(TcpFailure, AbortFromAnotherThreadWakesPendingCallsHereAndAtThePeer) {
  run_ranks(2, [&](int rank, Bootstrap& b) {
    auto t = connect_tcp(b, {0, 1}, milliseconds(60000));
    uint8_t x = 0;
    if (rank == 1) {
      try {
        t->recv(0, &x, 1);
        ADD_FAILURE() << "recv returned although rank 0 aborted";
      } catch (const PeerLostError& e) {
        EXPECT_THAT(e.what(), HasSubstr("rank 0 (world rank 0)"));
      }
      return;
    }
    std::thread killer([&] {
      std::this_thread::sleep_for(milliseconds(100));
      t->abort("shutting down: rank 7 was lost");
    });
    try {
      t->recv(1, &x, 1);
      ADD_FAILURE() << "recv returned after abort";
    } catch (const AbortedError& e) { EXPECT_THAT(e.what(), HasSubstr("rank 7 was lost")); }
    killer.join();
    EXPECT_THROW(t->send(1, &x, 1), AbortedError);
  });
}

// A lost peer fails calls to the other peers too: the group cannot finish a
// collective without it.
TEST(TcpFailure, LostPeerFailsCallsToOtherPeers) {
  run_ranks(3, [&](int rank, Bootstrap& b) {
    auto t = connect_tcp(b, {0, 1, 2}, milliseconds(60000));
    b.barrier(milliseconds(10000));
    if (rank == 2) {
      t.reset();
      return;
    }
    uint8_t x = 0;
    if (rank == 0) {
      EXPECT_THROW(t->recv(2, &x, 1), PeerLostError);
      try {
        t->recv(1, &x, 1);
        ADD_FAILURE() << "recv from rank 1 succeeded after rank 2 was lost";
      } catch (const PeerLostError& e) { EXPECT_THAT(e.what(), HasSubstr("world rank 2")); }
    } else {
      // Rank 1 waits on rank 0, which shuts its sockets after losing rank 2.
      EXPECT_THROW(t->recv(0, &x, 1), PeerLostError);
    }
  });
}

TEST(TcpFailure, SizeMismatchIsMismatchErrorAndPeerLearnsIt) {
  run_ranks(2, [&](int rank, Bootstrap& b) {
    auto t = connect_tcp(b, {0, 1}, milliseconds(60000));
    std::vector<uint8_t> buf(20);
    if (rank == 0) {
      t->send(1, buf.data(), 10);
      EXPECT_THROW(t->recv(1, buf.data(), 1), PeerLostError);
      return;
    }
    try {
      t->recv(0, buf.data(), 20);
      ADD_FAILURE() << "recv of 20 bytes accepted a 10-byte message";
    } catch (const MismatchError& e) {
      EXPECT_THAT(e.what(), HasSubstr("sent a message of 10 bytes"));
      EXPECT_THAT(e.what(), HasSubstr("expected 20"));
    }
  });
}

}  // namespace
}  // namespace tandem
