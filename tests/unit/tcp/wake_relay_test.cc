// The wake relay between nodes: ranks as threads on two fake nodes, each
// node a doorbell over its own control block (futexes on private memory
// work between threads), the relay over UDP on loopback.
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "bootstrap/memory_bootstrap.h"
#include "shm/control.h"
#include "shm/doorbell.h"
#include "transport/tcp/interface.h"
#include "transport/tcp/wake_relay.h"

namespace tandem::tcp {
namespace {

// The transport's own choice for a group on one host (TANDEM_TCP_IFNAME is
// not set in unit tests).
SockAddr loopback() {
  std::string why;
  return choose_listen_address(true, why);
}

// Two nodes of two ranks: ranks 0, 1 on node 0, ranks 2, 3 on node 1.
struct TwoNodes {
  TwoNodes() : world(MemoryWorld::with_placement({0, 0, 1, 1})) {
    for (auto& c : controls) c = std::make_unique<ControlBlock>();
    for (int r = 0; r < 4; ++r) {
      boots.push_back(std::make_unique<MemoryBootstrap>(world, r));
      bells.push_back(std::make_unique<Doorbell>(controls[r / 2].get(), r % 2, 2));
    }
    relays.resize(4);
    std::vector<std::thread> t;
    for (int r = 0; r < 4; ++r)
      t.emplace_back([&, r] {
        Doorbell& bell = *bells[r];
        relays[r] = WakeRelay::create(
            *boots[r], [&bell](uint64_t round) { bell.relay(round); }, true, loopback(),
            std::chrono::seconds(30));
      });
    for (auto& x : t) x.join();
  }
  std::shared_ptr<MemoryWorld> world;
  std::unique_ptr<ControlBlock> controls[2];
  std::vector<std::unique_ptr<MemoryBootstrap>> boots;
  std::vector<std::unique_ptr<Doorbell>> bells;
  std::vector<std::unique_ptr<WakeRelay>> relays;
};

bool eventually(const std::function<bool()>& what) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!what()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// A request forwarded from either node reaches the other node's doorbell
// and wakes a rank sleeping there, the leader's own process included.
TEST(WakeRelay, ForwardedRequestWakesTheOtherNode) {
  TwoNodes n;
  const auto far = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::thread sleeper([&] { EXPECT_TRUE(n.bells[2]->wait(0, far, [] { return false; })); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  n.relays[1]->forward(1);  // any rank may forward, not only the leader
  sleeper.join();
  EXPECT_EQ(n.bells[3]->requested(), 1u);
  EXPECT_EQ(n.relays[2]->relayed(), 1u);
  n.relays[3]->forward(7);
  EXPECT_TRUE(eventually([&] { return n.bells[0]->requested() == 7; }));
  EXPECT_EQ(n.bells[2]->requested(), 1u) << "a node does not hear its own forwards";
}

// Only datagrams with the receiving node's key count: one from elsewhere is
// dropped, and the relay goes on serving.
TEST(WakeRelay, DatagramsWithoutTheKeyAreIgnored) {
  TwoNodes n;
  const SockAddr to = n.relays[2]->listening_on();
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  uint8_t forged[28] = {};  // the right size, not the key
  uint64_t round = 9;
  std::memcpy(forged + 16, &round, sizeof round);
  ASSERT_EQ(::sendto(fd, forged, sizeof forged, 0, to.get(), to.len), 28);
  ASSERT_EQ(::sendto(fd, "short", 5, 0, to.get(), to.len), 5);
  ::close(fd);
  n.relays[0]->forward(2);  // after the forged ones, on the same socket
  ASSERT_TRUE(eventually([&] { return n.relays[2]->relayed() == 1; }));
  EXPECT_EQ(n.bells[2]->requested(), 2u);
}

// A stray datagram from another process (a port scan, another program's
// traffic, another job's relay with its own key) of any size is dropped
// without waking anyone, and the relay goes on serving: it counts only the
// real wake-up. A datagram longer than a wake-up is read truncated and
// dropped too.
TEST(WakeRelay, StrayDatagramsOfAnySizeAreIgnored) {
  TwoNodes n;
  const SockAddr to = n.relays[2]->listening_on();
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> bytes(65000, 0xff);
  for (size_t size : {0, 1, 27, 28, 29, 4096, 65000})
    ASSERT_EQ(::sendto(fd, bytes.data(), size, 0, to.get(), to.len), static_cast<ssize_t>(size));
  ::close(fd);
  n.relays[0]->forward(3);
  ASSERT_TRUE(eventually([&] { return n.relays[2]->relayed() == 1; }));
  EXPECT_EQ(n.bells[2]->requested(), 3u);
  EXPECT_EQ(n.bells[3]->requested(), 3u);
}

// Nine nodes of one rank: a round forwarded from any node reaches every
// other node exactly once down a binomial tree; the origin sends
// ceil(log2 9) = 4 datagrams, not 8, and the job sends 8 in all.
TEST(WakeRelay, ARoundTravelsDownATreeAndReachesEveryNodeOnce) {
  const int n = 9;
  auto world = MemoryWorld::with_placement({0, 1, 2, 3, 4, 5, 6, 7, 8});
  std::vector<std::unique_ptr<ControlBlock>> controls;
  std::vector<std::unique_ptr<Doorbell>> bells;
  std::vector<std::unique_ptr<MemoryBootstrap>> boots;
  for (int r = 0; r < n; ++r) {
    controls.push_back(std::make_unique<ControlBlock>());
    bells.push_back(std::make_unique<Doorbell>(controls[r].get(), 0, 1));
    boots.push_back(std::make_unique<MemoryBootstrap>(world, r));
  }
  std::vector<std::unique_ptr<WakeRelay>> relays(n);
  std::vector<std::thread> t;
  for (int r = 0; r < n; ++r)
    t.emplace_back([&, r] {
      Doorbell& bell = *bells[r];
      relays[r] = WakeRelay::create(
          *boots[r], [&bell](uint64_t round) { bell.relay(round); }, true, loopback(),
          std::chrono::seconds(30));
    });
  for (auto& x : t) x.join();
  uint64_t round = 10;
  for (int origin : {4, 0}) {
    ++round;  // rounds only grow
    std::vector<uint64_t> sent(n), relayed(n);
    for (int r = 0; r < n; ++r) {
      sent[r] = relays[r]->sent();
      relayed[r] = relays[r]->relayed();
    }
    relays[origin]->forward(round);
    for (int r = 0; r < n; ++r) {
      if (r == origin) continue;
      EXPECT_TRUE(eventually([&] { return bells[r]->requested() == round; })) << "node " << r;
      EXPECT_TRUE(eventually([&] { return relays[r]->relayed() == relayed[r] + 1; }))
          << "node " << r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // nothing more arrives
    uint64_t total = 0;
    for (int r = 0; r < n; ++r) {
      total += relays[r]->sent() - sent[r];
      EXPECT_LE(relays[r]->sent() - sent[r], 4u) << "node " << r;
      if (r != origin) {
        EXPECT_EQ(relays[r]->relayed(), relayed[r] + 1) << "node " << r << " heard it twice";
      }
    }
    EXPECT_EQ(relays[origin]->sent() - sent[origin], 4u);
    EXPECT_EQ(total, static_cast<uint64_t>(n - 1));
    EXPECT_EQ(relays[origin]->relayed(), relayed[origin]) << "the origin hears its own round";
  }
}

// TANDEM_WAKE_RELAY=0 on any rank: nobody gets a relay (and nobody hangs
// in the exchange that decides it).
TEST(WakeRelay, OneRankOptingOutTurnsItOffEverywhere) {
  auto world = MemoryWorld::with_placement({0, 1, 1});
  ControlBlock node0{}, node1{};
  std::vector<std::unique_ptr<WakeRelay>> relays(3);
  std::vector<std::thread> t;
  for (int r = 0; r < 3; ++r)
    t.emplace_back([&, r] {
      MemoryBootstrap boot(world, r);
      Doorbell bell(r == 0 ? &node0 : &node1, r == 0 ? 0 : r - 1, r == 0 ? 1 : 2);
      relays[r] = WakeRelay::create(
          boot, [&bell](uint64_t round) { bell.relay(round); }, r != 2, loopback(),
          std::chrono::seconds(30));
    });
  for (auto& x : t) x.join();
  for (int r = 0; r < 3; ++r) EXPECT_EQ(relays[r], nullptr) << "rank " << r;
}

}  // namespace
}  // namespace tandem::tcp
