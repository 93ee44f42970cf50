// The allreduce algorithms across nodes (recursive doubling, halving and
// doubling, ring) over the memory transport, ranks as threads, each forced
// and as the model picks it:
//   - every type x op x count (0, 1, odd, several pieces) on 1..9 ranks,
//     against the reference values, bitwise identical on every rank;
//   - random floats: the exact bits of each algorithm's fixed tree, computed
//     here independently (fold of the extra ranks, butterfly, ring chains);
//     recursive doubling and halving-doubling give the same bits;
//   - the critical path in messages (a Lamport clock carried beside every
//     message) is log2 for the tree algorithms at 16-64 ranks, not n;
//   - every algorithm exchanges only with the partners a transport
//     connects ahead (partners.h), which are few and symmetric.
#include <algorithm>
#include <cstring>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "bootstrap/memory_bootstrap.h"
#include "collectives/allreduce_algorithms.h"
#include "collectives/model.h"
#include "collectives/collectives.h"
#include "collectives/partners.h"
#include "common/errors.h"
#include "reference.h"
#include "transport/memory/memory_transport.h"

namespace tandem {
namespace testing {
namespace {

using Algo = AllreduceAlgorithm;
constexpr Algo kAlgos[] = {Algo::kRecursiveDoubling, Algo::kHalvingDoubling, Algo::kRing,
                           Algo::kAuto};

// Runs body(transport) on n threads joined by the memory transport.
void run_group(int n, const std::function<void(Transport&)>& body) {
  auto world = std::make_shared<MemoryWorld>(n);
  auto net = make_memory_network();
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  std::vector<int> all(n);
  for (int r = 0; r < n; ++r) all[r] = r;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        MemoryBootstrap b(world, r);
        auto t = connect_memory(net, b, all, std::chrono::seconds(60));
        body(*t);
      } catch (const std::exception& e) { errors[r] = e.what(); }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << "rank " << r << " of " << n;
}

constexpr tandem_dtype_t kTypes[] = {TANDEM_UINT8,   TANDEM_INT8,    TANDEM_INT32,
                                     TANDEM_INT64,   TANDEM_FLOAT16, TANDEM_BFLOAT16,
                                     TANDEM_FLOAT32, TANDEM_FLOAT64, TANDEM_BOOL};
constexpr tandem_op_t kOps[] = {TANDEM_SUM, TANDEM_AVERAGE, TANDEM_MIN, TANDEM_MAX, TANDEM_PRODUCT};

// One case on every rank: values against the reference, and the result's
// bytes gathered so the caller can compare ranks.
void check_values(Transport& t, Algo a, tandem_dtype_t type, tandem_op_t op, size_t count,
                  bool in_place, std::vector<std::vector<uint8_t>>& results) {
  const int n = t.size(), me = t.rank();
  const size_t es = dtype_size(type);
  const double pre = floating(type) ? 0.5 : 1.0, post = floating(type) ? 4.0 : 1.0;
  std::vector<uint8_t> send(count * es + 1), recv(count * es + 1, 0xAB);
  for (size_t i = 0; i < count; ++i) put(type, send.data(), i, input_value(type, op, me, i));
  const std::vector<uint8_t> input = send;
  uint8_t* out = in_place ? send.data() : recv.data();
  Reduction r{type, op, pre, true, post, n};
  allreduce(t, send.data(), out, count, r, a);
  uint8_t want[27][8] = {};
  for (size_t key = 0; key < 27; ++key)
    for (size_t i = 0; i < 81; ++i)
      if (pattern_key(i) == key) {
        expected(type, op, n, i, pre, post, want[key]);
        break;
      }
  size_t bad = 0;
  for (size_t i = 0; i < count && bad < 3; ++i)
    if (std::memcmp(out + i * es, want[pattern_key(i)], es) != 0) {
      ++bad;
      ADD_FAILURE() << algorithm_name(a) << " rank " << me << "/" << n << " " << dtype_name(type)
                    << " " << op_name(op) << " count " << count << (in_place ? " in place" : "")
                    << ": element " << i << " differs";
    }
  if (!in_place) {
    EXPECT_EQ(recv[count * es], 0xAB) << "wrote past the end of recv";
    EXPECT_EQ(send, input) << algorithm_name(a) << ": the send buffer changed";
  }
  results[me].assign(out, out + count * es);
}

class CrossNodeSweep : public ::testing::TestWithParam<int> {};

// Every case runs in one group (the threads loop over the same cases);
// results[case][rank] holds each rank's bytes.
using Results = std::vector<std::vector<std::vector<uint8_t>>>;

void expect_same_everywhere(const Results& results, int n) {
  for (size_t c = 0; c < results.size(); ++c)
    for (int r = 1; r < n; ++r)
      EXPECT_TRUE(results[c][r] == results[c][0])
          << "case " << c << ": rank " << r << " differs from rank 0";
}

TEST_P(CrossNodeSweep, EveryTypeOpAndCount) {
  const int n = GetParam();
  Results results(2 * 4 * 4 * 9 * 5, std::vector<std::vector<uint8_t>>(n));
  run_group(n, [&](Transport& t) {
    size_t c = 0;
    for (bool in_place : {false, true})
      for (Algo a : kAlgos)
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}})
          for (auto type : kTypes)
            for (auto op : kOps) {
              auto& slot = results[c++];
              if (type == TANDEM_BOOL && op == TANDEM_AVERAGE) continue;
              check_values(t, a, type, op, count, in_place, slot);
            }
  });
  expect_same_everywhere(results, n);
}

// More than one piece (steps.h: 1 MiB) per step, blocks of odd sizes.
TEST_P(CrossNodeSweep, LargeCountSeveralPieces) {
  const int n = GetParam();
  const size_t count = (size_t{3} << 20) / 4 + 5;  // 3 MiB + 20 B of float32
  Results results(2 * 4 * 3, std::vector<std::vector<uint8_t>>(n));
  run_group(n, [&](Transport& t) {
    size_t c = 0;
    for (bool in_place : {false, true})
      for (Algo a : kAlgos)
        for (auto type : {TANDEM_FLOAT32, TANDEM_INT8, TANDEM_FLOAT16})
          check_values(t, a, type, TANDEM_SUM, type == TANDEM_FLOAT32 ? count : count * 2 + 1,
                       in_place, results[c++]);
  });
  expect_same_everywhere(results, n);
}

INSTANTIATE_TEST_SUITE_P(Ranks, CrossNodeSweep, ::testing::Range(1, 10),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

void check_order(int n, Algo a, size_t count) {
  std::vector<std::vector<float>> inputs(n, std::vector<float>(count));
  for (int r = 0; r < n; ++r) {
    std::mt19937 gen(77 + r);
    std::uniform_real_distribution<float> d(-1e3f, 1e3f);
    for (auto& v : inputs[r]) v = d(gen);
  }
  std::vector<std::vector<float>> results(n);
  run_group(n, [&](Transport& t) {
    std::vector<float> out(count);
    Reduction r{TANDEM_FLOAT32, TANDEM_AVERAGE, 0.1, true, 3.3, n};
    allreduce(t, inputs[t.rank()].data(), out.data(), count, r, a);
    results[t.rank()] = out;
  });
  const Algo used = a == Algo::kAuto ? choose_allreduce(n, count * 4) : a;
  for (int r = 1; r < n; ++r)
    ASSERT_EQ(0, std::memcmp(results[r].data(), results[0].data(), count * 4))
        << algorithm_name(a) << " " << n << " ranks: rank " << r << " differs from rank 0";
  size_t bad = 0;
  for (size_t i = 0; i < count && bad < 3; i += (i < 100 ? 1 : 97)) {
    std::vector<float> x(n);
    for (int r = 0; r < n; ++r) x[r] = inputs[r][i];
    const float want =
        used == Algo::kRing ? ring_value(x, i, count, 0.1f, 3.3f) : tree_value(x, 0.1f, 3.3f);
    if (results[0][i] != want) {
      ++bad;
      ADD_FAILURE() << algorithm_name(a) << " (" << algorithm_name(used) << ") " << n
                    << " ranks, count " << count << ": element " << i << " is " << results[0][i]
                    << ", its tree gives " << want;
    }
  }
}

TEST(CrossNodeOrder, EveryElementFollowsItsAlgorithmsTree) {
  for (int n : {2, 3, 4, 5, 6, 7, 8, 11, 16}) {
    for (Algo a : kAlgos) {
      for (size_t count : {size_t{1}, size_t{1001}, size_t{300007}}) check_order(n, a, count);
    }
  }
}

TEST(CrossNodeOrder, RecursiveDoublingAndHalvingDoublingAgree) {
  for (int n : {3, 6, 8}) {
    const size_t count = 70001;
    std::vector<std::vector<double>> got(2);
    for (int k = 0; k < 2; ++k) {
      run_group(n, [&](Transport& t) {
        std::vector<double> in(count), out(count);
        std::mt19937 gen(5 + t.rank());
        std::uniform_real_distribution<double> d(-1, 1);
        for (auto& v : in) v = d(gen);
        Reduction r{TANDEM_FLOAT64, TANDEM_SUM, 0.7, true, 1.0, n};
        allreduce(t, in.data(), out.data(), count, r,
                  k == 0 ? Algo::kRecursiveDoubling : Algo::kHalvingDoubling);
        if (t.rank() == n - 1) got[k] = out;
      });
    }
    EXPECT_TRUE(got[0] == got[1]) << n << " ranks";
  }
}

// A transport that carries a Lamport clock beside every message: after a
// collective, the largest clock is the longest chain of messages, each
// waiting for the one before (the rounds of latency a real network pays).
class ClockTransport : public Transport {
 public:
  explicit ClockTransport(Transport& inner) : t_(inner) {}
  int rank() const override { return t_.rank(); }
  int size() const override { return t_.size(); }
  void send(int peer, const void* data, size_t bytes) override {
    t_.send(peer, &clock_, sizeof clock_);
    t_.send(peer, data, bytes);
  }
  void recv(int peer, void* data, size_t bytes) override {
    uint64_t c = 0;
    t_.recv(peer, &c, sizeof c);
    t_.recv(peer, data, bytes);
    clock_ = std::max(clock_, c + 1);
  }
  void sendrecv(int to, const void* s, size_t sb, int from, void* r, size_t rb) override {
    uint64_t mine = clock_, c = 0;
    t_.sendrecv(to, &mine, sizeof mine, from, &c, sizeof c);
    t_.sendrecv(to, s, sb, from, r, rb);
    clock_ = std::max(clock_, c + 1);
  }
  void abort(const std::string& why) override { t_.abort(why); }
  uint64_t clock() const { return clock_; }

 private:
  Transport& t_;
  uint64_t clock_ = 0;
};

uint64_t depth(int n, Algo a, size_t count) {
  std::vector<uint64_t> clocks(n);
  run_group(n, [&](Transport& inner) {
    ClockTransport t(inner);
    std::vector<float> in(count, 1.0f), out(count);
    allreduce(t, in.data(), out.data(), count, Reduction{TANDEM_FLOAT32, TANDEM_SUM, 1, true, 1, n},
              a);
    EXPECT_EQ(out[count - 1], static_cast<float>(n));
    clocks[t.rank()] = t.clock();
  });
  return *std::max_element(clocks.begin(), clocks.end());
}

TEST(CrossNodeRounds, TreesTakeLog2RoundsRingTakesN) {
  for (int n : {16, 17, 24, 32, 48, 64}) {
    int k = 0;
    while ((2 << k) <= n) ++k;
    const uint64_t fold = (1 << k) == n ? 0 : 2;
    // The fold adds its message in and its message out, at most.
    const uint64_t rd = depth(n, Algo::kRecursiveDoubling, 1000);
    EXPECT_GE(rd, static_cast<uint64_t>(k)) << n << " ranks";
    EXPECT_LE(rd, k + fold) << n << " ranks";
    const uint64_t hd = depth(n, Algo::kHalvingDoubling, 1000);
    EXPECT_GE(hd, 2u * k) << n << " ranks";
    EXPECT_LE(hd, 2 * k + fold) << n << " ranks";
    EXPECT_EQ(depth(n, Algo::kRing, 1000), 2u * (n - 1)) << n << " ranks";
    // The model's pick for a small message is a tree.
    EXPECT_LE(depth(n, Algo::kAuto, 1), k + fold) << n << " ranks";
  }
}

// allgatherv and broadcast, each algorithm and the model's pick, over
// 1..9 ranks: uneven and empty blocks, in place, every root.
enum class Gather { kRing, kBruck, kAuto };

void gather(Transport& t, Gather g, const void* send, void* recv,
            const std::vector<size_t>& bytes) {
  if (g == Gather::kRing) allgatherv_ring(t, send, recv, bytes);
  else if (g == Gather::kBruck) allgatherv_bruck(t, send, recv, bytes);
  else allgatherv(t, send, recv, bytes);
}

uint8_t byte_of(int rank, size_t i) { return static_cast<uint8_t>(rank * 37 + i * 11 + i / 251); }

TEST(CrossNodeAllgather, EveryAlgorithmLayoutAndSize) {
  for (int n = 1; n <= 9; ++n) {
    for (Gather g : {Gather::kRing, Gather::kBruck, Gather::kAuto}) {
      for (size_t scale : {size_t{0}, size_t{1}, size_t{1000}, size_t{70001}}) {
        std::vector<size_t> bytes(n);
        for (int r = 0; r < n; ++r) bytes[r] = scale * ((r * 5 + 3) % 4);  // some blocks empty
        size_t total = 0;
        for (size_t b : bytes) total += b;
        std::vector<std::vector<uint8_t>> results(n);
        run_group(n, [&](Transport& t) {
          const int me = t.rank();
          size_t at = 0;
          for (int r = 0; r < me; ++r) at += bytes[r];
          std::vector<uint8_t> mine(bytes[me]), out(total + 1, 0xEE);
          for (size_t i = 0; i < mine.size(); ++i) mine[i] = byte_of(me, i);
          const bool in_place = me % 2 == 1;
          if (in_place) std::copy(mine.begin(), mine.end(), out.begin() + static_cast<long>(at));
          gather(t, g, in_place ? out.data() + at : mine.data(), out.data(), bytes);
          EXPECT_EQ(out[total], 0xEE) << "wrote past the end";
          out.resize(total);
          results[me] = out;
        });
        std::vector<uint8_t> want;
        for (int r = 0; r < n; ++r)
          for (size_t i = 0; i < bytes[r]; ++i) want.push_back(byte_of(r, i));
        for (int r = 0; r < n; ++r)
          EXPECT_TRUE(results[r] == want) << n << " ranks, algorithm " << static_cast<int>(g)
                                          << ", scale " << scale << ": rank " << r;
      }
    }
  }
}

TEST(CrossNodeBroadcast, EveryAlgorithmRootAndSize) {
  for (int n = 1; n <= 9; ++n) {
    for (int k = 0; k < 3; ++k) {
      for (size_t bytes : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}, size_t{100003}}) {
        for (int root = 0; root < n; ++root) {
          // One char per rank: vector<bool> packs the ranks' flags into one word,
          // and the ranks' threads writing their bits at once lose each other's.
          std::vector<char> ok(n, 0);
          run_group(n, [&](Transport& t) {
            std::vector<uint8_t> buf(bytes + 1, 0);
            if (t.rank() == root)
              for (size_t i = 0; i < bytes; ++i) buf[i] = byte_of(root, i);
            buf[bytes] = 0xEE;
            if (k == 0) broadcast_binomial(t, buf.data(), bytes, root);
            else if (k == 1) broadcast_scatter_allgather(t, buf.data(), bytes, root);
            else broadcast(t, buf.data(), bytes, root);
            bool good = buf[bytes] == 0xEE;
            for (size_t i = 0; i < bytes && good; ++i) good = buf[i] == byte_of(root, i);
            ok[t.rank()] = good;
          });
          for (int r = 0; r < n; ++r)
            EXPECT_TRUE(ok[r]) << n << " ranks, algorithm " << k << ", " << bytes << " bytes, root "
                               << root << ": rank " << r;
        }
      }
    }
  }
}

uint64_t gather_depth(int n, Gather g) {
  std::vector<uint64_t> clocks(n);
  run_group(n, [&](Transport& inner) {
    ClockTransport t(inner);
    std::vector<size_t> bytes(n, 16);
    std::vector<uint8_t> mine(16, 1), out(16 * n);
    gather(t, g, mine.data(), out.data(), bytes);
    clocks[t.rank()] = t.clock();
  });
  return *std::max_element(clocks.begin(), clocks.end());
}

TEST(CrossNodeRounds, BruckGathersInLog2Rounds) {
  for (int n : {5, 16, 33, 64}) {
    int k = 0;
    while ((1 << k) < n) ++k;
    EXPECT_EQ(gather_depth(n, Gather::kBruck), static_cast<uint64_t>(k)) << n << " ranks";
    EXPECT_EQ(gather_depth(n, Gather::kRing), static_cast<uint64_t>(n - 1)) << n << " ranks";
    EXPECT_EQ(gather_depth(n, Gather::kAuto), static_cast<uint64_t>(k)) << n << " ranks, 16 B each";
  }
}

// A transport that fails any exchange with a peer outside the plan.
class PlannedOnlyTransport : public Transport {
 public:
  explicit PlannedOnlyTransport(Transport& inner)
      : t_(inner), plan_(algorithm_partners(inner.rank(), inner.size())) {}
  int rank() const override { return t_.rank(); }
  int size() const override { return t_.size(); }
  void send(int peer, const void* data, size_t bytes) override {
    check(peer);
    t_.send(peer, data, bytes);
  }
  void recv(int peer, void* data, size_t bytes) override {
    check(peer);
    t_.recv(peer, data, bytes);
  }
  void sendrecv(int to, const void* s, size_t sb, int from, void* r, size_t rb) override {
    check(to);
    check(from);
    t_.sendrecv(to, s, sb, from, r, rb);
  }
  void abort(const std::string& why) override { t_.abort(why); }

 private:
  void check(int peer) const {
    if (!std::binary_search(plan_.begin(), plan_.end(), peer))
      ADD_FAILURE() << "rank " << rank() << " of " << size() << " exchanges with " << peer
                    << ", which algorithm_partners does not list";
  }
  Transport& t_;
  std::vector<int> plan_;
};

TEST(CrossNodePartners, EveryAlgorithmExchangesOnlyWithPlannedPartners) {
  for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 24, 31, 33}) {
    run_group(n, [&](Transport& inner) {
      PlannedOnlyTransport t(inner);
      const int me = t.rank();
      for (Algo a : kAlgos)
        for (size_t count : {size_t{1}, size_t{5000}}) {
          std::vector<float> in(count, 1.0f), out(count);
          allreduce(t, in.data(), out.data(), count,
                    Reduction{TANDEM_FLOAT32, TANDEM_SUM, 1, true, 1, n}, a);
          EXPECT_EQ(out[count - 1], static_cast<float>(n));
        }
      for (Gather g : {Gather::kRing, Gather::kBruck}) {
        std::vector<size_t> bytes(n, 3);
        std::vector<uint8_t> mine(3, static_cast<uint8_t>(me)), all(3 * n);
        gather(t, g, mine.data(), all.data(), bytes);
        EXPECT_EQ(all[3 * n - 1], n - 1);
      }
      for (int root = 0; root < n; ++root) {
        std::vector<uint8_t> buf(1000, me == root ? 9 : 0);
        broadcast_binomial(t, buf.data(), buf.size(), root);
        broadcast_scatter_allgather(t, buf.data(), buf.size(), root);
        EXPECT_EQ(buf[999], 9);
      }
      barrier(t);
    });
  }
}

TEST(CrossNodePartners, SymmetricAndLogarithmic) {
  for (int n = 1; n <= 4100; n = n < 70 ? n + 1 : n * 3 / 2 + 1) {
    int log = 0;
    while ((1 << log) < n) ++log;
    std::vector<std::vector<int>> p(n);
    size_t most = 0;
    for (int i = 0; i < n; ++i) {
      p[i] = algorithm_partners(i, n);
      most = std::max(most, p[i].size());
      EXPECT_TRUE(std::is_sorted(p[i].begin(), p[i].end()));
      EXPECT_FALSE(std::binary_search(p[i].begin(), p[i].end(), i)) << n;
    }
    EXPECT_LE(most, static_cast<size_t>(3 * log)) << n << " ranks";
    if (n >= 8) {
      EXPECT_LT(most, static_cast<size_t>(n - 1)) << n << " ranks: the plan is a full mesh";
    }
    for (int i = 0; i < n; ++i)
      for (int j : p[i])
        EXPECT_TRUE(std::binary_search(p[j].begin(), p[j].end(), i))
            << n << " ranks: " << i << " plans " << j << " but not the other way round";
  }
}

TEST(CrossNodeChoice, ModelPicksByLatencyAndBandwidth) {
  // Small messages: the fewest rounds; large ones: bandwidth-optimal.
  for (int n : {2, 3, 8, 64, 1000, 1024})
    EXPECT_EQ(choose_allreduce(n, 8), Algo::kRecursiveDoubling) << n;
  for (int n : {2, 8, 64, 1024})
    EXPECT_EQ(choose_allreduce(n, size_t{256} << 20), Algo::kHalvingDoubling) << n;
  // Not a power of two: the fold moves the whole vector twice more, a ring
  // does not; the ring's 2(n-1) rounds only pay once they are small next
  // to the transfer.
  EXPECT_EQ(choose_allreduce(3, size_t{256} << 20), Algo::kRing);
  EXPECT_EQ(choose_allreduce(1000, size_t{256} << 20), Algo::kRing);
  EXPECT_EQ(choose_allreduce(1000, size_t{1} << 20), Algo::kHalvingDoubling);
  // Allgather: Bruck for a negotiation's slots on many nodes, not for 2
  // ranks (same rounds, one copy more) or huge totals on a few.
  EXPECT_TRUE(allgather_uses_bruck(1000, size_t{1000} << 10));
  EXPECT_FALSE(allgather_uses_bruck(2, 1024));
  EXPECT_FALSE(allgather_uses_bruck(4, size_t{256} << 20));
  // Broadcast: a tree for small messages, scatter + allgather for large.
  EXPECT_FALSE(broadcast_uses_scatter(64, 1024));
  EXPECT_TRUE(broadcast_uses_scatter(64, size_t{64} << 20));
  // Every prediction is finite and grows with the size.
  for (Algo a : {Algo::kRecursiveDoubling, Algo::kHalvingDoubling, Algo::kRing})
    EXPECT_LT(predicted_seconds(a, 100, 1 << 10, measured_link()),
              predicted_seconds(a, 100, 1 << 20, measured_link()));
}

TEST(CrossNodeChoice, SettingIsStrict) {
  EXPECT_EQ(parse_allreduce_algorithm("ring"), Algo::kRing);
  EXPECT_EQ(parse_allreduce_algorithm("auto"), Algo::kAuto);
  try {
    parse_allreduce_algorithm("tree");
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("TANDEM_ALLREDUCE_ALGORITHM='tree'"), std::string::npos);
  }
}

}  // namespace
}  // namespace testing
}  // namespace tandem
