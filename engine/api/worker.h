// The C API's one worker thread ("tandem-worker"): nonblocking collectives
// run on it in the order they were started. A blocking collective runs on
// the caller's thread, but only once every earlier nonblocking one finished
// and while no other collective runs, so that all collectives of a process
// reach the Communicator one at a time and in call order on every rank.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace tandem {

class Worker {
 public:
  Worker();
  // Finishes the queued tasks, then joins the thread.
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Queues a task; tasks must not throw (they complete their request).
  void submit(std::function<void()> task);
  // Runs fn here, in order after every task submitted before; rethrows.
  void run_inline(const std::function<void()>& fn);

 private:
  void loop();
  void finish();  // busy_ ends: wake whoever can go next
  std::mutex mu_;
  // Separate wake-ups so that a blocking collective never wakes the idle
  // worker thread (which would compete for the CPU with the ranks).
  std::condition_variable work_cv_;          // the worker: a task is runnable, or stop
  std::condition_variable idle_cv_;          // run_inline callers: everything before them done
  std::deque<std::function<void()>> queue_;  // under mu_
  bool stop_ = false;                        // under mu_
  // Atomics, so that a blocking collective with nothing queued and nothing
  // running takes no lock (two mutexes per call were a large share of an
  // 8-byte allreduce's time outside the wait). Whoever clears busy_ then
  // reads the other two, and whoever raises one of them then tries busy_:
  // one of the two sides always sees the other (both seq_cst), so no
  // wake-up is lost.
  std::atomic<bool> busy_{false};       // a collective runs (task or inline)
  std::atomic<size_t> queued_{0};       // queue_.size()
  std::atomic<int> inline_waiters_{0};  // run_inline callers waiting on idle_cv_
  std::thread thread_;
};

}  // namespace tandem
