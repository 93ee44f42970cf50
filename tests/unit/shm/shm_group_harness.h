// What the ShmGroup tests share: ranks as threads of one process, and
// inputs whose float sum depends on the order of addition, with the
// rank-order reduction every path must reproduce bit for bit.
#pragma once

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "bootstrap/memory_bootstrap.h"
#include "common/reduce.h"
#include "shm/shm_group.h"

namespace tandem {
namespace testing {

// Ranks as threads of one process, each with its own ShmGroup on one node.
inline void run_group(int n, const ShmOptions& o, const std::function<void(ShmGroup&, int)>& body) {
  auto world = std::make_shared<MemoryWorld>(n);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        MemoryBootstrap b(world, r);
        ShmGroup g(b, o);
        body(g, r);
      } catch (const std::exception& e) { errors[r] = e.what(); }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

inline float input(int rank, size_t i, int call) {
  return static_cast<float>(std::sin(0.37 * static_cast<double>(i) + rank * 1.3 + call)) *
         (rank % 2 ? 1e4f : 1e-3f);
}

// One call's buffers on one rank: its input of `call`, reduced in place,
// into a separate buffer, or in place on `arena` (a tandem_alloc_shared
// buffer of at least count floats).
struct CallBuffers {
  std::vector<float> in, out;
  float* send = nullptr;
  float* recv = nullptr;
  CallBuffers(int rank, size_t count, int call, bool in_place, float* arena)
      : in(count), out(count, -1.0f) {
    for (size_t i = 0; i < count; ++i) in[i] = input(rank, i, call);
    send = in.data();
    recv = in_place ? send : out.data();
    if (arena) {
      std::memcpy(arena, in.data(), count * sizeof(float));
      send = recv = arena;
    }
  }
};

// The sum of every rank's input of `call` in rank order.
inline std::vector<float> rank_order_sum(int n, size_t count, int call, const Reduction& red) {
  std::vector<float> ref(count);
  std::vector<std::vector<float>> all(n, std::vector<float>(count));
  std::vector<const void*> ins(n);
  for (int j = 0; j < n; ++j) {
    for (size_t i = 0; i < count; ++i) all[j][i] = input(j, i, call);
    ins[j] = all[j].data();
  }
  reduce(ref.data(), ins.data(), n, count, red);
  return ref;
}

}  // namespace testing
}  // namespace tandem
