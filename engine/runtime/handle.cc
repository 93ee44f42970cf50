#include "runtime/handle.h"

namespace tandem::runtime {

HandleState::HandleState(tandem_handle_t id, int tensors)
    : id_(id), remaining_(tensors), outputs_(static_cast<size_t>(tensors)) {
  if (tensors == 0) {
    finished_ = true;
    done_ = true;
  }
}

void HandleState::complete_one(int index, tandem_result_t result, const std::string& error,
                               TensorOutput output) {
  if (complete_one_quietly(index, result, error, std::move(output))) publish();
}

bool HandleState::complete_one_quietly(int index, tandem_result_t result, const std::string& error,
                                       TensorOutput output) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_ || remaining_ <= 0) return false;
  if (result != TANDEM_SUCCESS && result_ == TANDEM_SUCCESS) {
    result_ = result;
    error_ = error;
  }
  if (index >= 0 && static_cast<size_t>(index) < outputs_.size())
    outputs_[index] = std::move(output);
  if (--remaining_ > 0) return false;
  finished_ = true;
  return true;
}

// Waiters and pollers see the handle done from here on, as when
// complete_one did it all at once; the callback runs once, here or in
// set_callback (which sees done_).
void HandleState::publish() {
  tandem_callback_t cb = nullptr;
  void* user = nullptr;
  tandem_result_t final_result;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!finished_ || done_.load(std::memory_order_relaxed)) return;
    done_.store(true, std::memory_order_release);
    final_result = result_;
    cb = callback_;
    user = user_;
    callback_ = nullptr;
  }
  cv_.notify_all();
  if (cb) cb(id_, final_result, user);
}

void HandleState::set_received_splits(std::vector<int64_t> splits) {
  std::lock_guard<std::mutex> lock(mu_);
  received_splits_ = std::move(splits);
}

void HandleState::set_int_result(int value) {
  std::lock_guard<std::mutex> lock(mu_);
  int_result_ = value;
}

int HandleState::int_result() const {
  std::lock_guard<std::mutex> lock(mu_);
  return int_result_;
}

bool HandleState::done() const { return done_.load(std::memory_order_acquire); }

// result_ and error_ are final once done_ reads true.
tandem_result_t HandleState::result() const { return done() ? result_ : TANDEM_ERR_IN_PROGRESS; }

std::string HandleState::error() const { return done() ? error_ : std::string(); }

const char* HandleState::error_cstr() const { return done() ? error_.c_str() : ""; }

bool HandleState::wait_until(std::chrono::steady_clock::time_point deadline) const {
  if (done()) return true;
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_until(lock, deadline, [&] { return done_.load(std::memory_order_relaxed); });
}

void HandleState::wait() const {
  if (done()) return;
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_.load(std::memory_order_relaxed); });
}

void HandleState::set_callback(tandem_callback_t cb, void* user) {
  tandem_result_t r;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!done_.load(std::memory_order_relaxed)) {
      callback_ = cb;
      user_ = user;
      return;
    }
    r = result_;
  }
  cb(id_, r, user);
}

const TensorOutput* HandleState::output(int index) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!done() || index < 0 || static_cast<size_t>(index) >= outputs_.size()) return nullptr;
  return &outputs_[index];
}

std::shared_ptr<HandleState> HandleTable::create(int tensors) {
  std::lock_guard<std::mutex> lock(mu_);
  auto h = std::make_shared<HandleState>(next_++, tensors);
  handles_[h->id()] = h;
  return h;
}

std::shared_ptr<HandleState> HandleTable::find(tandem_handle_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = handles_.find(id);
  return it == handles_.end() ? nullptr : it->second;
}

void HandleTable::release(tandem_handle_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  handles_.erase(id);
}

size_t HandleTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return handles_.size();
}

}  // namespace tandem::runtime
