// Ranks as threads over one MemoryWorld, for the TCP tests: TCP over loopback
// between threads of one process exercises the real sockets, fast.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/memory_bootstrap.h"

namespace tandem {
namespace test {

// Runs fn(world_rank, bootstrap) on `size` threads; every exception that
// escapes a rank becomes a test failure naming the rank.
inline void run_ranks(int size, const std::function<void(int, Bootstrap&)>& fn,
                      std::vector<int> ranks_per_node = {}) {
  auto world = std::make_shared<MemoryWorld>(size, std::move(ranks_per_node));
  std::mutex mu;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      MemoryBootstrap bootstrap(world, r);
      try {
        fn(r, bootstrap);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mu);
        errors.push_back("rank " + std::to_string(r) + ": " + e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) ADD_FAILURE() << e;
}

// Deterministic bytes that differ per (seed, position): a shifted, truncated
// or mixed-up message fails the comparison.
inline std::vector<uint8_t> pattern(size_t bytes, uint64_t seed) {
  std::vector<uint8_t> v(bytes);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < bytes; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = static_cast<uint8_t>(x >> 24);
  }
  return v;
}

// Index of the first differing byte, or -1: a readable failure instead of a
// 64 MiB dump.
inline long long first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return static_cast<long long>(i);
  return -1;
}

}  // namespace test
}  // namespace tandem
