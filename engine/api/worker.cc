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
  }
  work_cv_.notify_one();
}

void Worker::finished_locked() {
  busy_ = false;
  if (!queue_.empty()) work_cv_.notify_one();
  else if (inline_waiters_ > 0) idle_cv_.notify_all();
}

void Worker::run_inline(const std::function<void()>& fn) {
  std::unique_lock<std::mutex> lock(mu_);
  ++inline_waiters_;
  idle_cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
  --inline_waiters_;
  busy_ = true;
  lock.unlock();
  struct Release {
    Worker* w;
    ~Release() {
      std::lock_guard<std::mutex> l(w->mu_);
      w->finished_locked();
    }
  } release{this};
  fn();
}

void Worker::loop() {
  pthread_setname_np(pthread_self(), "tandem-worker");
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return (!queue_.empty() && !busy_) || (stop_ && queue_.empty() && !busy_); });
    if (queue_.empty()) return;  // stopping, nothing left
    auto task = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    task();
    lock.lock();
    finished_locked();
  }
}

}  // namespace tandem
