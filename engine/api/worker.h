// The C API's one worker thread ("tandem-worker"): nonblocking collectives
// run on it in the order they were started. A blocking collective runs on
// the caller's thread, but only once every earlier nonblocking one finished
// and while no other collective runs, so that all collectives of a process
// reach the Communicator one at a time and in call order on every rank.
#pragma once

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
  void finished_locked();  // busy_ ends: wake whoever can go next
  std::mutex mu_;
  // Separate wake-ups so that a blocking collective never wakes the idle
  // worker thread (which would compete for the CPU with the ranks).
  std::condition_variable work_cv_;  // the worker: a task is runnable, or stop
  std::condition_variable idle_cv_;  // run_inline callers: everything before them done
  int inline_waiters_ = 0;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tandem
