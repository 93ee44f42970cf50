#include "api/worker.h"

#include <pthread.h>

namespace tandem {

Worker::Worker() : thread_([this] { loop(); }) {}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Worker::submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_all();
}

void Worker::run_inline(const std::function<void()>& fn) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
  busy_ = true;
  lock.unlock();
  struct Release {
    Worker* w;
    ~Release() {
      {
        std::lock_guard<std::mutex> l(w->mu_);
        w->busy_ = false;
      }
      w->cv_.notify_all();
    }
  } release{this};
  fn();
}

void Worker::loop() {
  pthread_setname_np(pthread_self(), "tandem-worker");
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return (!queue_.empty() && !busy_) || (stop_ && queue_.empty()); });
    if (queue_.empty()) return;  // stopping, nothing left
    auto task = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    task();
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace tandem
