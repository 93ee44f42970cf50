// Planned connections between forked ranks (each its own process, its own
// descriptor limit):
//   - a rank SIGKILLed in a loop of each allreduce algorithm fails every
//     survivor with PeerLostError, also the survivors that hold no socket
//     to it: the failure travels through the partners they wait on, each
//     shutting its sockets down as it fails (docs/tcp.md, "Failure across
//     partners"); the per-call timeout is a minute, so a PeerLostError
//     proves nobody waited for a timeout;
//   - 64 ranks start and reduce under a soft RLIMIT_NOFILE of 40, far below
//     the 63 sockets a full mesh needs; with TANDEM_TCP_CONNECT=all the same
//     job fails at set-up with an error naming the limit;
//   - a full mesh of 80 ranks still connects: more handshakes at once than
//     the 64 a rank once held (a connection storm dropped members, and a
//     rank with 64 writable sockets spun forever reading their events).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <algorithm>
#include <sstream>

#include "collectives/collectives.h"
#include "collectives/partners.h"
#include "common/settings.h"
#include "tests/unit/tcp/fork_ranks.h"
#include "transport/tcp/tcp_transport.h"

namespace tandem {
namespace {

using Algo = AllreduceAlgorithm;
using std::chrono::milliseconds;
using test::ForkRanks;

std::vector<int> iota_members(int n) {
  std::vector<int> m(n);
  for (int i = 0; i < n; ++i) m[i] = i;
  return m;
}

constexpr int kRanks = 16, kVictim = 5;

void doomed(Algo a, int rank, Bootstrap& b, const std::function<void(const std::string&)>& say) {
  const std::vector<int> plan = algorithm_partners(rank, kRanks);
  auto t = connect_tcp(b, iota_members(kRanks), timeout_from_environment(), plan);
  std::vector<float> buf(4096, 1.0f);
  allreduce(*t, buf.data(), buf.data(), buf.size(), Reduction{}, a);
  say(std::string("ready ") + (std::binary_search(plan.begin(), plan.end(), kVictim) ? "1" : "0"));
  try {
    for (;;)
      allreduce(*t, buf.data(), buf.data(), buf.size(), Reduction{TANDEM_FLOAT32, TANDEM_MAX}, a);
  } catch (const std::exception& e) { say(test::describe(e)); }
}

TEST(PlanFork, KilledRankFailsSurvivorsThatHaveNoSocketToIt) {
  for (Algo a : {Algo::kRecursiveDoubling, Algo::kHalvingDoubling, Algo::kRing}) {
    ::setenv(kTimeoutVariable, "60", 1);
    ForkRanks ranks(kRanks, [a](int r, Bootstrap& b, std::function<void(const std::string&)> say) {
      doomed(a, r, b, say);
    });
    ::unsetenv(kTimeoutVariable);
    ranks.serve(2, milliseconds(60000));
    std::vector<bool> socket(kRanks);
    for (int r = 0; r < kRanks; ++r) {
      const std::string l = ranks.line(r, milliseconds(60000));
      ASSERT_EQ(l.substr(0, 6), "ready ") << r << ": " << l;
      socket[r] = l == "ready 1";
    }
    const int without = static_cast<int>(std::count(socket.begin(), socket.end(), false)) - 1;
    EXPECT_GE(without, 5) << "too few survivors without a socket to the victim to show anything";
    std::this_thread::sleep_for(milliseconds(50));
    const int64_t at = test::now_ns();
    ranks.signal(kVictim, SIGKILL);
    double slowest = 0;
    for (int r = 0; r < kRanks; ++r) {
      if (r == kVictim) continue;
      const std::string l = ranks.line(r, milliseconds(60000));
      std::istringstream in(l);
      std::string word, kind;
      int64_t ns = 0;
      in >> word >> kind >> ns;
      EXPECT_EQ(word + " " + kind, "result PeerLost")
          << algorithm_name(a) << " rank " << r << (socket[r] ? "" : " (no socket to the victim)")
          << ": " << l;
      EXPECT_LT(ns - at, int64_t{30} * 1000000000)
          << algorithm_name(a) << " rank " << r << " waited for a timeout";
      slowest = std::max(slowest, (ns - at) / 1e6);
      EXPECT_EQ(ranks.wait(r), 0) << algorithm_name(a) << " rank " << r;
    }
    std::printf(
        "[ measure  ] %s, %d ranks, %d without a socket to the victim: the last survivor "
        "failed %.1f ms after SIGKILL\n",
        algorithm_name(a), kRanks, without, slowest);
    ranks.wait(kVictim);
  }
}

constexpr int kBig = 64;
constexpr rlim_t kSoftLimit = 40;

void limited(int rank, Bootstrap& b, const std::function<void(const std::string&)>& say) {
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = kSoftLimit;
  if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) {
    say("setrlimit failed");
    return;
  }
  try {
    auto t = connect_tcp(b, iota_members(kBig), timeout_from_environment(),
                         algorithm_partners(rank, kBig));
    std::vector<float> buf(1000, static_cast<float>(rank));
    for (Algo a : {Algo::kRecursiveDoubling, Algo::kHalvingDoubling, Algo::kRing})
      allreduce(*t, buf.data(), buf.data(), buf.size(), Reduction{TANDEM_FLOAT32, TANDEM_MAX}, a);
    say("ok " + std::to_string(t->traffic().connections) + " " +
        std::to_string(static_cast<int>(buf[999])));
  } catch (const std::exception& e) { say(std::string("error ") + e.what()); }
}

std::vector<std::string> run_limited(const char* scheme) {
  ::setenv(kConnectVariable, scheme, 1);
  ForkRanks ranks(kBig, limited);
  ::unsetenv(kConnectVariable);
  std::vector<std::string> lines;
  try {
    ranks.serve(2, milliseconds(60000));
  } catch (const Error&) {
    // A rank that failed before publishing its endpoint leaves the rest of
    // the rounds unserved; its line says why.
  }
  for (int r = 0; r < kBig; ++r) lines.push_back(ranks.line(r, milliseconds(60000)));
  return lines;
}

TEST(PlanFork, SixtyFourRanksStartUnderASoftLimitOfForty) {
  const auto lines = run_limited("planned");
  for (int r = 0; r < kBig; ++r) {
    std::istringstream in(lines[r]);
    std::string word;
    int connections = -1, max = -1;
    in >> word >> connections >> max;
    EXPECT_EQ(word, "ok") << "rank " << r << ": " << lines[r];
    EXPECT_EQ(max, kBig - 1) << "rank " << r;
    EXPECT_EQ(connections, static_cast<int>(algorithm_partners(r, kBig).size())) << "rank " << r;
    EXPECT_LT(connections, 16) << "rank " << r;
  }
}

TEST(PlanFork, TheFullMeshIsRefusedAtSetUpNamingTheLimit) {
  const auto lines = run_limited("all");
  int named = 0;
  for (int r = 0; r < kBig; ++r) {
    if (lines[r].find("RLIMIT_NOFILE soft limit 40") != std::string::npos &&
        lines[r].find("ulimit -n") != std::string::npos)
      ++named;
    EXPECT_EQ(lines[r].rfind("ok", 0), std::string::npos)
        << "rank " << r << " connected: " << lines[r];
  }
  EXPECT_EQ(named, kBig) << "first rank: " << lines[0];
}

TEST(PlanFork, AFullMeshOfEightyConnects) {
  constexpr int kMesh = 80;
  ::setenv(kTimeoutVariable, "60", 1);
  ForkRanks ranks(kMesh, [](int rank, Bootstrap& b, std::function<void(const std::string&)> say) {
    try {
      auto t = connect_tcp(b, iota_members(kMesh), timeout_from_environment());
      std::vector<float> buf(10, static_cast<float>(rank));
      allreduce(*t, buf.data(), buf.data(), buf.size(), Reduction{TANDEM_FLOAT32, TANDEM_MAX},
                Algo::kRecursiveDoubling);
      say("ok " + std::to_string(t->traffic().connections) + " " +
          std::to_string(static_cast<int>(buf[9])));
    } catch (const std::exception& e) { say(std::string("error ") + e.what()); }
  });
  ::unsetenv(kTimeoutVariable);
  ranks.serve(2, milliseconds(60000));
  for (int r = 0; r < kMesh; ++r)
    EXPECT_EQ(ranks.line(r, milliseconds(90000)), "ok 79 79") << "rank " << r;
}

}  // namespace
}  // namespace tandem
