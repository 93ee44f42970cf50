#include "api/worker.h"

#include <pthread.h>

namespace tandem {

Worker::Worker() : thread_([this] { loop(); }) {}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
}

void Worker::submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
    queued_.fetch_add(1);
  }
  work_cv_.notify_one();
}

void Worker::finish() {
  busy_.store(false);
  if (queued_.load() == 0 && inline_waiters_.load() == 0) return;
  // Under the lock: a waiter checks its predicate holding it, so it is
  // either before its check (and sees busy_ clear) or already waiting.
  std::lock_guard<std::mutex> lock(mu_);
  if (!queue_.empty()) work_cv_.notify_one();
  else idle_cv_.notify_all();
}

void Worker::run_inline(const std::function<void()>& fn) {
  if (queued_.load() != 0 || busy_.exchange(true)) {
    std::unique_lock<std::mutex> lock(mu_);
    inline_waiters_.fetch_add(1);
    idle_cv_.wait(lock, [&] { return queue_.empty() && !busy_.exchange(true); });
    inline_waiters_.fetch_sub(1);
  }
  struct Release {
    Worker* w;
    ~Release() { w->finish(); }
  } release{this};
  fn();
}

void Worker::loop() {
  pthread_setname_np(pthread_self(), "tandem-worker");
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] {
      return (!queue_.empty() && !busy_.exchange(true)) ||
             (stop_ && queue_.empty() && !busy_.load());
    });
    if (queue_.empty()) return;  // stopping, nothing left
    auto task = std::move(queue_.front());
    queue_.pop_front();
    queued_.fetch_sub(1);
    lock.unlock();
    task();
    finish();
    lock.lock();
  }
}

}  // namespace tandem
