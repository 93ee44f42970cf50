// Allreduce on every layout x type x op x count against the reference, plus
// the properties a sweep of exact values cannot show: float16 accumulates in
// float32, results are bitwise identical on every rank and run to run, and
// buffers in the shared arena are reduced in place.
#include <algorithm>
#include <array>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "collectives/allreduce_algorithms.h"
#include "collectives/model.h"
#include "common/reduce.h"
#include "common/errors.h"
#include "reference.h"
#include "thread_world.h"

namespace tandem {
namespace testing {
namespace {

constexpr tandem_dtype_t kTypes[] = {TANDEM_UINT8,   TANDEM_INT8,    TANDEM_INT32,
                                     TANDEM_INT64,   TANDEM_FLOAT16, TANDEM_BFLOAT16,
                                     TANDEM_FLOAT32, TANDEM_FLOAT64, TANDEM_BOOL};
constexpr tandem_op_t kOps[] = {TANDEM_SUM, TANDEM_AVERAGE, TANDEM_MIN, TANDEM_MAX, TANDEM_PRODUCT};

// Runs one allreduce case on this rank and checks every element.
void check_case(Communicator& c, tandem_dtype_t t, tandem_op_t op, size_t count, bool in_place) {
  if (t == TANDEM_BOOL && op == TANDEM_AVERAGE) return;
  const int n = c.identity().size, me = c.identity().rank;
  const size_t es = dtype_size(t);
  const double pre = floating(t) ? 0.5 : 1.0, post = floating(t) ? 4.0 : 1.0;
  std::vector<uint8_t> send(count * es + 1), recv(count * es + 1, 0xAB);
  for (size_t i = 0; i < count; ++i) put(t, send.data(), i, input_value(t, op, me, i));
  void* out = in_place ? send.data() : recv.data();
  c.allreduce(send.data(), out, count, t, op, pre, post);
  std::array<std::array<uint8_t, 8>, 27> want{};
  for (size_t key = 0; key < 27; ++key) {
    // Find an element with this key among the first 81 and compute it.
    for (size_t i = 0; i < 81; ++i)
      if (pattern_key(i) == key) {
        expected(t, op, n, i, pre, post, want[key].data());
        break;
      }
  }
  const uint8_t* got = static_cast<const uint8_t*>(out);
  size_t bad = 0;
  for (size_t i = 0; i < count && bad < 3; ++i) {
    if (std::memcmp(got + i * es, want[pattern_key(i)].data(), es) != 0) {
      ++bad;
      ADD_FAILURE() << "rank " << me << "/" << n << " " << dtype_name(t) << " " << op_name(op)
                    << " count " << count << (in_place ? " in place" : "") << ": element " << i
                    << " differs";
    }
  }
  if (!in_place) { EXPECT_EQ(recv[count * es], 0xAB) << "wrote past the end of recv"; }
}

class AllreduceSweep : public ::testing::TestWithParam<Layout> {};

TEST_P(AllreduceSweep, EveryTypeOpAndSmallCount) {
  const Layout l = GetParam();
  run_layout(l, [](Communicator& c) {
    for (bool in_place : {false, true})
      for (auto t : kTypes)
        for (auto op : kOps)
          for (size_t count : {0, 1, 7, 1023}) check_case(c, t, op, count, in_place);
  });
}

TEST_P(AllreduceSweep, LargeCountEveryType) {
  const Layout l = GetParam();
  CommunicatorOptions o = small_options();
  o.shm_chunk_bytes = 256 << 10;
  run_layout(
      l,
      [](Communicator& c) {
        for (bool in_place : {false, true}) {
          for (auto t : kTypes) check_case(c, t, TANDEM_SUM, 1 << 20, in_place);
          for (auto op : kOps) check_case(c, TANDEM_FLOAT32, op, 1 << 20, in_place);
        }
      },
      o);
}

INSTANTIATE_TEST_SUITE_P(Layouts, AllreduceSweep, ::testing::ValuesIn(all_layouts()),
                         [](const auto& info) { return info.param.name(); });

// 2048 + 1 + 1 + 1: summed in float16, every step rounds back to 2048 (2049
// is a tie, to even), as float16 arithmetic and Horovod's CPU kernels do
// (common/reduce.h); accumulated in float32 and rounded once it would be
// 2052. bfloat16 likewise: 256 + 1 rounds back to 256 each time.
TEST(Allreduce, Float16RoundsAfterEveryStep) {
  run_world(4, {}, [](Communicator& c) {
    uint16_t v = ref_to_half(c.identity().rank == 0 ? 2048.0f : 1.0f), out = 0;
    c.allreduce(&v, &out, 1, TANDEM_FLOAT16, TANDEM_SUM);
    EXPECT_EQ(ref_from_half(out), 2048.0f);
    uint16_t b = ref_to_bf16(c.identity().rank == 0 ? 256.0f : 1.0f), bout = 0;
    c.allreduce(&b, &bout, 1, TANDEM_BFLOAT16, TANDEM_SUM);
    EXPECT_EQ(ref_from_bf16(bout), 256.0f);
  });
}

// Random floats with inexact scales: every rank must hold the same bits,
// twice in a row; on one node the bits of a rank-order float32 fold, with
// one rank per node those of the tree of the algorithm across nodes that
// the model picks (reference.h).
enum class Order { kNone, kRankFold, kCrossNodeTree };
void determinism(int size, std::vector<int> layout, Order order, size_t count = 100003) {
  std::vector<std::vector<float>> results(size);
  std::vector<std::vector<float>> inputs(size, std::vector<float>(count));
  for (int r = 0; r < size; ++r) {
    std::mt19937 gen(1234 + r);
    std::uniform_real_distribution<float> d(-1e3f, 1e3f);
    for (auto& x : inputs[r]) x = d(gen);
  }
  for (int round = 0; round < 2; ++round) {
    run_world(size, layout, [&](Communicator& c) {
      const int me = c.identity().rank;
      std::vector<float> out(count);
      c.allreduce(inputs[me].data(), out.data(), count, TANDEM_FLOAT32, TANDEM_AVERAGE, 0.1, 3.3);
      if (round == 0) {
        results[me] = out;
      } else {
        EXPECT_EQ(0, std::memcmp(out.data(), results[me].data(), count * 4))
            << "rank " << me << " run 2 differs";
      }
    });
  }
  for (int r = 1; r < size; ++r)
    EXPECT_EQ(0, std::memcmp(results[r].data(), results[0].data(), count * 4))
        << "rank " << r << " differs from rank 0";
  if (order == Order::kNone) return;
  const bool ring = choose_allreduce(size, count * 4) == AllreduceAlgorithm::kRing;
  for (size_t i = 0; i < count; i += 997) {
    std::vector<float> x(size);
    for (int r = 0; r < size; ++r) x[r] = inputs[r][i];
    float want = 0;
    if (order == Order::kRankFold) {
      float acc = x[0] * 0.1f;
      for (int r = 1; r < size; ++r) acc = acc + x[r] * 0.1f;
      want = acc / static_cast<float>(size) * 3.3f;
    } else {
      want = ring ? ring_value(x, i, count, 0.1f, 3.3f) : tree_value(x, 0.1f, 3.3f);
    }
    EXPECT_EQ(results[0][i], want) << "element " << i;
  }
}

TEST(Allreduce, DeterministicOneNode) { determinism(5, {}, Order::kRankFold); }
TEST(Allreduce, DeterministicTwoNodes) { determinism(6, {3, 3}, Order::kNone); }
TEST(Allreduce, DeterministicUneven) { determinism(4, {3, 1}, Order::kNone); }
// One rank per node: the transport alone reduces, along the tree of the
// algorithm the model picks (cross_node_test.cc checks each algorithm's),
// for a medium message and a small one, on 3 nodes (folded) and 4.
TEST(Allreduce, DeterministicOneRankPerNode) { determinism(3, {1, 1, 1}, Order::kCrossNodeTree); }
TEST(Allreduce, DeterministicOneRankPerNodeSmall) {
  determinism(4, {1, 1, 1, 1}, Order::kCrossNodeTree, 1001);
}

// An input in the shared arena is read by the peers where it lies.
TEST(Allreduce, SharedArenaBuffers) {
  for (auto layout : {std::vector<int>{}, std::vector<int>{2, 2}}) {
    run_world(4, layout, [](Communicator& c) {
      const size_t count = 50000;
      auto* buf = static_cast<int32_t*>(c.allocate_shared(count * 4));
      ASSERT_TRUE(c.is_shared(buf, count * 4));
      for (size_t i = 0; i < count; ++i) buf[i] = static_cast<int32_t>(i) * (c.identity().rank + 1);
      c.allreduce(buf, buf, count, TANDEM_INT32, TANDEM_SUM);  // in place
      for (size_t i = 0; i < count; i += 7) ASSERT_EQ(buf[i], static_cast<int32_t>(i) * 10);
      std::vector<int32_t> out(count);
      c.allreduce(buf, out.data(), count, TANDEM_INT32, TANDEM_MAX);  // arena -> private
      for (size_t i = 0; i < count; i += 7) ASSERT_EQ(out[i], static_cast<int32_t>(i) * 10);
      for (size_t i = 0; i < count; i += 7)
        ASSERT_EQ(buf[i], static_cast<int32_t>(i) * 10) << "input changed";
      c.free_shared(buf);
      void* again = c.allocate_shared(count * 4);
      EXPECT_EQ(again, buf) << "freed space is reused";
      c.free_shared(again);
      EXPECT_THROW(c.allocate_shared(size_t{2} << 20), InvalidArgument);
    });
  }
}

// allreduce_to hands the result to a sink instead of writing the buffer: every
// byte once, in increasing offset order, with the right values; on one node,
// two uniform nodes (cross-node hook per part) and an uneven layout; with
// every rank's buffer in its arena (the in-arena path), none, and only some
// (the ranks must then agree on the staged path); below the small-message
// size; with the input in the buffer, or in pieces of odd sizes behind an
// input source (the buffer then holds garbage, so a part read from it
// instead of the source shows up as a wrong value).
TEST(Allreduce, ResultSinkGetsEveryByteOnceInOrder) {
  for (auto layout : {std::vector<int>{}, std::vector<int>{2, 2}, std::vector<int>{3, 1}}) {
    for (int where = 0; where < 3; ++where) {  // 0 all in arena, 1 none, 2 rank 0 only
      for (size_t count : {size_t{300}, size_t{50000}}) {
        for (bool with_source : {false, true}) {
          run_world(4, layout, [&](Communicator& c) {
            const int me = c.identity().rank;
            const bool shared = where == 0 || (where == 2 && me == 0);
            std::vector<int32_t> heap;
            int32_t* buf = nullptr;
            if (shared) {
              buf = static_cast<int32_t*>(c.allocate_shared(count * 4));
            } else {
              heap.resize(count);
              buf = heap.data();
            }
            std::vector<int32_t> input(count);
            for (size_t i = 0; i < count; ++i) input[i] = static_cast<int32_t>(i % 1000) * (me + 1);
            // Pieces of 1..97 elements, the same cut on every rank or not.
            std::vector<size_t> cuts{0};
            for (size_t at = 0; at < count;) {
              at = std::min(count, at + 1 + (at * 7 + static_cast<size_t>(me) * 13) % 97);
              cuts.push_back(at);
            }
            Communicator::InputSource source = [&](size_t off, size_t* bytes) -> const void* {
              const size_t e = off / 4;
              auto it = std::upper_bound(cuts.begin(), cuts.end(), e);
              *bytes = (*it - e) * 4;
              return input.data() + e;
            };
            if (with_source) std::fill(buf, buf + count, 0x7F7F7F7F);
            else std::copy(input.begin(), input.end(), buf);
            std::vector<int32_t> out(count, -1);
            std::vector<int> seen(count * 4, 0);
            size_t next = 0;
            bool ordered = true;
            c.allreduce_to(
                buf, count, TANDEM_INT32, TANDEM_SUM, 1.0, 1.0,
                [&](size_t at, const void* data, size_t bytes) {
                  ordered = ordered && at >= next;
                  next = at + bytes;
                  ASSERT_LE(at + bytes, count * 4);
                  for (size_t k = at; k < at + bytes; ++k) ++seen[k];
                  std::memcpy(reinterpret_cast<char*>(out.data()) + at, data, bytes);
                },
                with_source ? &source : nullptr);
            EXPECT_TRUE(ordered) << "rank " << me << ": pieces out of order";
            size_t wrong_count = 0, wrong_value = 0;
            for (size_t k = 0; k < seen.size(); ++k) wrong_count += seen[k] != 1;
            for (size_t i = 0; i < count; ++i)
              wrong_value += out[i] != static_cast<int32_t>(i % 1000) * 10;
            EXPECT_EQ(wrong_count, 0u) << "rank " << me << " where " << where << " count " << count;
            EXPECT_EQ(wrong_value, 0u) << "rank " << me << " where " << where << " count " << count
                                       << (with_source ? " with a source" : "");
            EXPECT_EQ(input[7], static_cast<int32_t>(7) * (me + 1)) << "the source was written";
            if (shared) c.free_shared(buf);
          });
        }
      }
    }
  }
}

// In place on arena buffers, every local rank's (the in-arena path), for a
// type and op where order and scaling matter: the same bits as the staged
// path gives for private buffers.
TEST(Allreduce, InArenaPathMatchesStagedPath) {
  for (auto layout : {std::vector<int>{}, std::vector<int>{2, 2}}) {
    run_world(4, layout, [](Communicator& c) {
      const size_t count = 30011;
      const int me = c.identity().rank;
      auto* shared = static_cast<double*>(c.allocate_shared(count * 8));
      std::vector<double> priv(count);
      for (size_t i = 0; i < count; ++i)
        shared[i] = priv[i] = 1.0 / static_cast<double>(i + 1 + me * 7) + me * 1e-3;
      c.allreduce(shared, shared, count, TANDEM_FLOAT64, TANDEM_AVERAGE, 0.3, 1.7);
      c.allreduce(priv.data(), priv.data(), count, TANDEM_FLOAT64, TANDEM_AVERAGE, 0.3, 1.7);
      EXPECT_EQ(std::memcmp(shared, priv.data(), count * 8), 0) << "rank " << me;
      c.free_shared(shared);
    });
  }
}

// ------------------------------------------------ node-local algorithms
// The staged algorithm (copy in, reduce, copy out through the segment) and
// the direct one (single copy from and to peers' own buffers, needs CMA),
// each forced for every size above the one-barrier path, and the direct one
// with single copy turned off (it must stage instead): every type, op,
// odd and large count, in place or not, on every layout.
struct PathCase {
  Layout layout;
  int path;  // CommunicatorOptions::shm_allreduce_path: 1 staged, 2 direct
  bool cma;
  std::string name() const {
    return layout.name() + (path == 1 ? "_staged" : "_direct") + (cma ? "" : "_nocma");
  }
};

void PrintTo(const PathCase& c, std::ostream* os) { *os << c.name(); }

std::vector<PathCase> path_cases() {
  std::vector<PathCase> out;
  for (const Layout& l : all_layouts()) {
    out.push_back({l, 1, true});
    out.push_back({l, 2, true});
  }
  for (int n : {2, 3}) out.push_back({{n, {}}, 2, false});
  return out;
}

CommunicatorOptions path_options(const PathCase& c, size_t chunk = 4096) {
  CommunicatorOptions o = small_options();
  o.shm_chunk_bytes = chunk;
  o.shm_allreduce_path = c.path;
  o.shm_cma = c.cma;
  return o;
}

class AllreducePaths : public ::testing::TestWithParam<PathCase> {};

TEST_P(AllreducePaths, EveryTypeOpAndOddCount) {
  const PathCase pc = GetParam();
  run_layout(
      pc.layout,
      [](Communicator& c) {
        for (bool in_place : {false, true})
          for (auto t : kTypes)
            for (auto op : kOps)
              for (size_t count : {size_t{0}, size_t{1}, size_t{1023}, size_t{5003}, size_t{70001}})
                check_case(c, t, op, count, in_place);
      },
      path_options(pc));
}

// Several pieces of the direct algorithm per part, non-temporal stores
// (>= 8 MiB), and the staged algorithm's default step size.
TEST_P(AllreducePaths, LargeCount) {
  const PathCase pc = GetParam();
  run_layout(
      pc.layout,
      [](Communicator& c) {
        for (bool in_place : {false, true}) {
          check_case(c, TANDEM_FLOAT32, TANDEM_SUM, (size_t{1} << 21) + 3, in_place);
          check_case(c, TANDEM_FLOAT64, TANDEM_AVERAGE, (size_t{1} << 20) + 1, !in_place);
          check_case(c, TANDEM_INT8, TANDEM_MAX, 300007, in_place);
        }
      },
      path_options(pc, 256 << 10));
}

// Buffers in the shared arena are read and written in place by peers, next
// to private ones: every mix of arena/private send and recv per rank.
TEST_P(AllreducePaths, ArenaAndPrivateBuffersMixed) {
  const PathCase pc = GetParam();
  run_layout(
      pc.layout,
      [](Communicator& c) {
        const int me = c.identity().rank, n = c.identity().size;
        const size_t count = 40009;
        for (int mix = 0; mix < 4; ++mix) {
          // mix 0: send private, recv arena; 1: send arena, recv private;
          // 2: in place in the arena on odd ranks only; 3: in place in the arena.
          const bool send_shared = mix == 1 || mix == 3 || (mix == 2 && me % 2 == 1);
          const bool recv_shared = mix == 0 || mix == 3 || (mix == 2 && me % 2 == 1);
          const bool in_place = mix >= 2;
          std::vector<int32_t> send_heap(count), recv_heap(count, -1);
          int32_t* send =
              send_shared ? static_cast<int32_t*>(c.allocate_shared(count * 4)) : send_heap.data();
          int32_t* recv = in_place      ? send
                          : recv_shared ? static_cast<int32_t*>(c.allocate_shared(count * 4))
                                        : recv_heap.data();
          for (size_t i = 0; i < count; ++i)
            send[i] = static_cast<int32_t>(i % 1001) * (me + 1) - 7;
          c.allreduce(send, recv, count, TANDEM_INT32, TANDEM_SUM);
          size_t wrong = 0;
          for (size_t i = 0; i < count; ++i)
            wrong += recv[i] != static_cast<int32_t>(i % 1001) * (n * (n + 1) / 2) - 7 * n;
          EXPECT_EQ(wrong, 0u) << "rank " << me << " mix " << mix;
          if (!in_place) {
            for (size_t i = 0; i < count; i += 101)
              ASSERT_EQ(send[i], static_cast<int32_t>(i % 1001) * (me + 1) - 7) << "input changed";
          }
          if (send_shared) c.free_shared(send);
          if (recv_shared && !in_place) c.free_shared(recv);
        }
      },
      path_options(pc));
}

INSTANTIATE_TEST_SUITE_P(Layouts, AllreducePaths, ::testing::ValuesIn(path_cases()),
                         [](const auto& info) { return info.param.name(); });

// Random floats, AVERAGE with inexact scales: the direct algorithm gives
// the bits the staged one gives, on every rank, for 1-8 ranks and counts
// around the part and piece boundaries; and the default choice (by size)
// gives them too.
TEST(Allreduce, DirectPathBitwiseEqualsStaged) {
  for (int n = 1; n <= 8; ++n) {
    for (size_t count : {size_t{1031}, size_t{100003}, size_t{(1 << 18) + 17}}) {
      std::vector<std::vector<float>> inputs(n, std::vector<float>(count));
      for (int r = 0; r < n; ++r) {
        std::mt19937 gen(77 + r);
        std::uniform_real_distribution<float> d(-1e3f, 1e3f);
        for (auto& x : inputs[r]) x = d(gen);
      }
      std::vector<std::vector<std::vector<float>>> results(3, std::vector<std::vector<float>>(n));
      for (int path = 0; path < 3; ++path) {
        CommunicatorOptions o = small_options();
        o.shm_chunk_bytes = 64 << 10;
        o.shm_allreduce_path = path;
        run_world(
            n, {},
            [&](Communicator& c) {
              const int me = c.identity().rank;
              std::vector<float> out(count);
              c.allreduce(inputs[me].data(), out.data(), count, TANDEM_FLOAT32, TANDEM_AVERAGE, 0.1,
                          3.3);
              results[path][me] = out;
            },
            o);
      }
      for (int path = 0; path < 3; ++path)
        for (int r = 0; r < n; ++r)
          EXPECT_EQ(0, std::memcmp(results[path][r].data(), results[1][0].data(), count * 4))
              << n << " ranks, count " << count << ": path " << path << " rank " << r
              << " differs from the staged path's rank 0";
    }
  }
}

// Inputs of up to 24 bytes travel in the line of the barrier counter, by
// parity: back-to-back calls whose inputs change every time, so a reader
// that took a slot of the wrong parity (the call before or after) would see
// another iteration's values; mixed with larger calls and barriers in
// between, which move the parity.
TEST(Allreduce, InlineSmallInputsBackToBack) {
  for (int n : {1, 2, 3, 5, 8}) {
    run_world(n, {}, [](Communicator& c) {
      const int me = c.identity().rank, size = c.identity().size;
      for (int it = 0; it < 3000; ++it) {
        const size_t count = 1 + it % 6;  // 4..24 bytes
        int32_t in[6], out[6];
        for (size_t i = 0; i < count; ++i) in[i] = it * 100 + me * 7 + static_cast<int32_t>(i);
        c.allreduce(in, out, count, TANDEM_INT32, TANDEM_SUM);
        for (size_t i = 0; i < count; ++i)
          ASSERT_EQ(out[i], size * (it * 100 + static_cast<int32_t>(i)) + 7 * size * (size - 1) / 2)
              << "rank " << me << " iteration " << it << " element " << i;
        if (it % 97 == 0) c.barrier();
        if (it % 89 == 0) {
          std::vector<int32_t> big(3000, me), sum(3000);
          c.allreduce(big.data(), sum.data(), big.size(), TANDEM_INT32, TANDEM_SUM);
          ASSERT_EQ(sum[2999], size * (size - 1) / 2);
        }
      }
    });
  }
}

TEST(Allreduce, BadArguments) {
  run_world(2, {}, [](Communicator& c) {
    float x = 1;
    EXPECT_THROW(c.allreduce(nullptr, &x, 1, TANDEM_FLOAT32, TANDEM_SUM), InvalidArgument);
    EXPECT_THROW(c.allreduce(&x, &x, 1, static_cast<tandem_dtype_t>(42), TANDEM_SUM),
                 InvalidArgument);
    EXPECT_THROW(c.allreduce(&x, &x, 1, TANDEM_FLOAT32, static_cast<tandem_op_t>(9)),
                 InvalidArgument);
    EXPECT_THROW(c.allreduce(&x, &x, 1, TANDEM_INT32, TANDEM_SUM, 2.0, 1.0), InvalidArgument);
    EXPECT_THROW(c.allreduce(&x, &x, 1, TANDEM_BOOL, TANDEM_AVERAGE), InvalidArgument);
    // Still usable after argument errors.
    c.allreduce(&x, &x, 1, TANDEM_FLOAT32, TANDEM_SUM);
    EXPECT_EQ(x, 2.0f);
  });
}

}  // namespace
}  // namespace testing
}  // namespace tandem
