// The C API's worker (api/worker.h) on its own: a blocking collective runs
// after every task submitted before it, never two collectives at once
// (tasks or inline, from any thread), and the destructor drains the queue.
// The inline path takes no lock when the worker is idle, so these run many
// rounds from several threads to give a lost wake-up or an overlap a chance.
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "api/worker.h"

namespace tandem {
namespace {

// Counts collectives running at once; any overlap is recorded.
struct Exclusive {
  std::atomic<int> running{0};
  std::atomic<bool> overlapped{false};
  // Holds the "collective" for a few hundred loads, so that an overlap has
  // room to happen.
  void hold() {
    if (running.fetch_add(1) != 0) overlapped = true;
    for (int i = 0; i < 300; ++i)
      if (running.load() != 1) overlapped = true;
    running.fetch_sub(1);
  }
};

TEST(Worker, InlineRunsAfterEverythingSubmittedBefore) {
  Worker w;
  for (int round = 0; round < 2000; ++round) {
    std::atomic<int> done{0};
    const int tasks = round % 4;
    for (int t = 0; t < tasks; ++t)
      w.submit([&done, round] {
        if (round % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
        done.fetch_add(1);
      });
    int seen = -1;
    w.run_inline([&] { seen = done.load(); });
    ASSERT_EQ(seen, tasks) << "round " << round;
  }
}

TEST(Worker, NeverTwoCollectivesAtOnce) {
  Exclusive ex;
  std::atomic<int> tasks_run{0};
  {
    Worker w;
    std::vector<std::thread> callers;
    for (int c = 0; c < 3; ++c) {
      callers.emplace_back([&, c] {
        for (int i = 0; i < 3000; ++i) {
          if ((i + c) % 5 == 0) {
            w.submit([&] {
              ex.hold();
              tasks_run.fetch_add(1);
            });
          }
          w.run_inline([&] { ex.hold(); });
        }
      });
    }
    for (auto& t : callers) t.join();
  }  // the destructor drains what is still queued
  EXPECT_FALSE(ex.overlapped.load());
  EXPECT_EQ(tasks_run.load(), 3 * 600);
}

TEST(Worker, InlineExceptionReleasesTheWorker) {
  Worker w;
  EXPECT_THROW(w.run_inline([] { throw std::runtime_error("x"); }), std::runtime_error);
  std::atomic<bool> ran{false};
  w.submit([&] { ran = true; });
  w.run_inline([] {});
  EXPECT_TRUE(ran.load());
}

}  // namespace
}  // namespace tandem
