// Test support: N runtimes in one process (ranks as threads), and helpers
// to run one function per rank on its own thread.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/runtime.h"
#include "thread_data_path.h"

namespace tandem::runtime::testing {

struct Cluster {
  // Each runtime's messages go to `log` (warnings and errors) instead of
  // stderr, which keeps test output clean.
  explicit Cluster(int n, Settings s = test_settings()) : threads(n) {
    for (int r = 0; r < n; ++r)
      ranks.push_back(std::make_unique<Runtime>(r, n, threads.factory(r), s,
                                                [this](log::Level level, const std::string& m) {
                                                  std::lock_guard<std::mutex> lock(log_mu);
                                                  if (level <= log::Level::kWarn) log.push_back(m);
                                                }));
  }
  static Settings test_settings() {
    Settings s;
    s.cycle_time_ms = 0.2;
    s.idle_wait_ms = 0.5;
    return s;
  }
  // Runs body(rank, runtime) on one thread per rank and joins them.
  void each(const std::function<void(int, Runtime&)>& body) {
    std::vector<std::thread> t;
    for (int r = 0; r < static_cast<int>(ranks.size()); ++r)
      t.emplace_back([&, r] { body(r, *ranks[r]); });
    for (auto& x : t) x.join();
  }
  std::vector<std::string> logs() {
    std::lock_guard<std::mutex> lock(log_mu);
    return log;
  }

  ThreadCluster threads;
  std::mutex log_mu;
  std::vector<std::string> log;
  std::vector<std::unique_ptr<Runtime>> ranks;
};

inline TensorArg tensor(const std::string& name, const void* in, void* out,
                        std::vector<int64_t> shape, int dtype = TANDEM_FLOAT32) {
  TensorArg t;
  t.name = name;
  t.input = in;
  t.output = out;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

inline OpArgs allreduce(int op = TANDEM_SUM, int set = 0) {
  OpArgs a;
  a.op = op;
  a.process_set = set;
  return a;
}

// Waits (bounded, so a bug fails the test instead of hanging it).
inline tandem_result_t wait(const std::shared_ptr<HandleState>& h) {
  h->wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(60));
  return h->result();
}

}  // namespace tandem::runtime::testing
