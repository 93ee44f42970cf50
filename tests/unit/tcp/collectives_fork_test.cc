// The algorithms across nodes over the real TCP transport, ranks as forked
// processes on loopback (collectives/: recursive doubling, halving-doubling,
// ring, the model's pick; Bruck and ring allgather; binomial and
// scatter-allgather broadcast), 1-8, 12 and 16 ranks, each connected as the
// engine's Communicator connects them (the algorithms' partners at set-up,
// collectives/partners.h; any other peer on first use):
//   - exact values of small integers for several types and ops, sizes 0, 1,
//     odd and several 1 MiB pieces;
//   - random floats: every rank reports a hash of its result (they must all
//     agree) and whether sampled elements carry the bits of the algorithm's
//     tree (tests/unit/collectives/reference.h);
// and failures: a rank killed in the middle of a loop of each algorithm on 5
// ranks (folded) fails every survivor with PeerLostError, well within the
// minute of TANDEM_TIMEOUT (so no one waited for a timeout, and no one hung).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <sstream>

#include "collectives/collectives.h"
#include "collectives/model.h"
#include "collectives/partners.h"
#include "common/settings.h"
#include "tests/unit/collectives/reference.h"
#include "tests/unit/tcp/fork_ranks.h"
#include "transport/tcp/tcp_transport.h"

namespace tandem {
namespace {

using std::chrono::milliseconds;
using test::ForkRanks;
using Algo = AllreduceAlgorithm;
constexpr Algo kAlgos[] = {Algo::kRecursiveDoubling, Algo::kHalvingDoubling, Algo::kRing,
                           Algo::kAuto};

uint64_t fnv(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t*>(p)[i]) * 1099511628211ull;
  return h;
}

// One rank's whole sweep; says "bad <what>" for each wrong result and
// "hash <case> <value>" for each random-float result, then "done".
void sweep(int rank, Bootstrap& b, const std::function<void(const std::string&)>& say) {
  const int size = b.identity().size;
  std::vector<int> all(size);
  for (int r = 0; r < size; ++r) all[r] = r;
  auto t = connect_tcp(b, all, milliseconds(60000), algorithm_partners(rank, size));
  const int n = t->size();
  int c = 0;
  for (Algo a : kAlgos) {
    const std::string name = algorithm_name(a);
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}, (size_t{1} << 19) + 3}) {
      for (auto [type, op] :
           {std::pair{TANDEM_INT32, TANDEM_SUM}, std::pair{TANDEM_FLOAT16, TANDEM_AVERAGE},
            std::pair{TANDEM_FLOAT64, TANDEM_MAX}, std::pair{TANDEM_INT8, TANDEM_PRODUCT}})
        for (bool in_place : {false, true}) {
          const size_t es = dtype_size(type);
          const double pre = testing::floating(type) ? 0.5 : 1.0,
                       post = testing::floating(type) ? 4.0 : 1.0;
          std::vector<uint8_t> send(count * es), recv(count * es);
          for (size_t i = 0; i < count; ++i)
            testing::put(type, send.data(), i, testing::input_value(type, op, rank, i));
          std::vector<uint8_t>& out = in_place ? send : recv;
          allreduce(*t, send.data(), out.data(), count, Reduction{type, op, pre, true, post, n}, a);
          uint8_t want[27][8] = {};
          for (size_t key = 0; key < 27; ++key)
            for (size_t i = 0; i < 81; ++i)
              if (testing::pattern_key(i) == key) {
                testing::expected(type, op, n, i, pre, post, want[key]);
                break;
              }
          for (size_t i = 0; i < count; ++i)
            if (std::memcmp(out.data() + i * es, want[testing::pattern_key(i)], es) != 0) {
              say("bad " + name + " " + dtype_name(type) + " " + op_name(op) + " count " +
                  std::to_string(count) + (in_place ? " in place" : "") + " element " +
                  std::to_string(i));
              break;
            }
        }
    }
    // Random floats: the same bits everywhere, and each algorithm's tree.
    const size_t count = 300007;
    std::vector<std::vector<float>> in(n, std::vector<float>(count));
    for (int r = 0; r < n; ++r) {
      std::mt19937 gen(99 + r);
      std::uniform_real_distribution<float> d(-1e3f, 1e3f);
      for (auto& v : in[r]) v = d(gen);
    }
    std::vector<float> out(count);
    allreduce(*t, in[rank].data(), out.data(), count,
              Reduction{TANDEM_FLOAT32, TANDEM_AVERAGE, 0.1, true, 3.3, n}, a);
    // In place: the same bits.
    std::vector<float> buf = in[rank];
    allreduce(*t, buf.data(), buf.data(), count,
              Reduction{TANDEM_FLOAT32, TANDEM_AVERAGE, 0.1, true, 3.3, n}, a);
    if (std::memcmp(buf.data(), out.data(), count * 4) != 0)
      say("bad " + name + " in place differs");
    const Algo used = a == Algo::kAuto ? choose_allreduce(n, count * 4) : a;
    for (size_t i = 0; i < count; i += 1009) {
      std::vector<float> x(n);
      for (int r = 0; r < n; ++r) x[r] = in[r][i];
      const float want = used == Algo::kRing ? testing::ring_value(x, i, count, 0.1f, 3.3f)
                                             : testing::tree_value(x, 0.1f, 3.3f);
      if (out[i] != want) {
        say("bad " + name + " tree of element " + std::to_string(i));
        break;
      }
    }
    say("hash " + std::to_string(c++) + " " + std::to_string(fnv(out.data(), count * 4)));
  }
  // allgatherv (uneven, some empty) and broadcast, each algorithm.
  for (int g = 0; g < 3; ++g) {
    std::vector<size_t> bytes(n);
    size_t total = 0;
    for (int r = 0; r < n; ++r) {
      bytes[r] = static_cast<size_t>((r * 7 + 1) % 3) * 40001;
      total += bytes[r];
    }
    std::vector<uint8_t> mine(bytes[rank]), all(total);
    for (size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<uint8_t>(rank + i * 3);
    if (g == 0) allgatherv_ring(*t, mine.data(), all.data(), bytes);
    else if (g == 1) allgatherv_bruck(*t, mine.data(), all.data(), bytes);
    else allgatherv(*t, mine.data(), all.data(), bytes);
    size_t pos = 0;
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < bytes[r]; ++i, ++pos)
        if (all[pos] != static_cast<uint8_t>(r + i * 3)) {
          say("bad allgather " + std::to_string(g) + " block of rank " + std::to_string(r));
          r = n;
          break;
        }
    const int root = n - 1;
    std::vector<uint8_t> buf(1000003, 0);
    if (rank == root)
      for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 13 + 5);
    if (g == 0) broadcast_binomial(*t, buf.data(), buf.size(), root);
    else if (g == 1) broadcast_scatter_allgather(*t, buf.data(), buf.size(), root);
    else broadcast(*t, buf.data(), buf.size(), root);
    for (size_t i = 0; i < buf.size(); ++i)
      if (buf[i] != static_cast<uint8_t>(i * 13 + 5)) {
        say("bad broadcast " + std::to_string(g) + " byte " + std::to_string(i));
        break;
      }
  }
  say("done");
}

std::vector<std::string> lines_until_done(ForkRanks& ranks, int r) {
  std::vector<std::string> out;
  for (;;) {
    std::string l = ranks.line(r, milliseconds(120000));
    if (l == "done" || l.empty()) {
      if (l.empty()) out.push_back("exited without 'done'");
      return out;
    }
    out.push_back(l);
  }
}

TEST(CollectivesFork, EveryAlgorithmOverTcpOn1To16Ranks) {
  for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 12, 16}) {
    ForkRanks ranks(n, sweep);
    ranks.serve(2, milliseconds(60000));
    std::vector<std::vector<std::string>> hashes(n);
    for (int r = 0; r < n; ++r) {
      for (const std::string& l : lines_until_done(ranks, r)) {
        if (l.rfind("hash ", 0) == 0) hashes[r].push_back(l);
        else ADD_FAILURE() << n << " ranks, rank " << r << ": " << l;
      }
      EXPECT_EQ(ranks.wait(r), 0) << n << " ranks, rank " << r;
    }
    EXPECT_EQ(hashes[0].size(), 4u) << n << " ranks";
    for (int r = 1; r < n; ++r)
      EXPECT_EQ(hashes[r], hashes[0]) << n << " ranks: rank " << r << "'s results differ";
  }
}

// Every rank loops on one algorithm; the parent kills rank 2 of 5 once all
// are in the loop. Survivors must fail with PeerLostError, each through its
// own socket or through a peer whose transport failed and shut its sockets.
void doomed(Algo a, Bootstrap& b, const std::function<void(const std::string&)>& say) {
  auto t = connect_tcp(b, {0, 1, 2, 3, 4}, timeout_from_environment());
  std::vector<float> buf(1 << 18, 1.0f);
  allreduce(*t, buf.data(), buf.data(), buf.size(), Reduction{}, a);
  say("ready");
  try {
    for (;;)
      allreduce(*t, buf.data(), buf.data(), buf.size(), Reduction{TANDEM_FLOAT32, TANDEM_MAX}, a);
  } catch (const std::exception& e) { say(test::describe(e)); }
}

TEST(CollectivesFork, KilledRankFailsEverySurvivorOfEachAlgorithm) {
  constexpr int kVictim = 2;
  for (Algo a : {Algo::kRecursiveDoubling, Algo::kHalvingDoubling, Algo::kRing}) {
    ::setenv(kTimeoutVariable, "60", 1);
    ForkRanks ranks(5, [a](int, Bootstrap& b, std::function<void(const std::string&)> say) {
      doomed(a, b, say);
    });
    ::unsetenv(kTimeoutVariable);
    ranks.serve(2, milliseconds(60000));
    for (int r = 0; r < 5; ++r) ASSERT_EQ(ranks.line(r, milliseconds(60000)), "ready") << r;
    std::this_thread::sleep_for(milliseconds(50));
    const int64_t at = test::now_ns();
    ranks.signal(kVictim, SIGKILL);
    for (int r = 0; r < 5; ++r) {
      if (r == kVictim) continue;
      const std::string l = ranks.line(r, milliseconds(60000));
      std::istringstream in(l);
      std::string word, kind;
      int64_t ns = 0;
      in >> word >> kind >> ns;
      EXPECT_EQ(word + " " + kind, "result PeerLost")
          << algorithm_name(a) << " rank " << r << ": " << l;
      EXPECT_LT(ns - at, int64_t{30} * 1000000000)
          << algorithm_name(a) << " rank " << r << " waited for a timeout";
      std::printf("[ measure  ] %s rank %d: %s %.1f ms after SIGKILL\n", algorithm_name(a), r,
                  kind.c_str(), (ns - at) / 1e6);
      EXPECT_EQ(ranks.wait(r), 0) << algorithm_name(a) << " rank " << r;
    }
    ranks.wait(kVictim);
  }
}

}  // namespace
}  // namespace tandem
