// Handles: what an enqueue call gives back. A handle covers one or more
// tensors (grouped allreduce) and is done when all of them are; the first
// failure is its result. Engine-allocated outputs (allgather, alltoall,
// reducescatter) live in the handle until it is released.
#pragma once

#include <atomic>
#include <condition_variable>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tandem/tandem.h"

namespace tandem::runtime {

// A result in device memory (GPU tensors, device_path.h): the memory is
// owned here; `copy` moves it to the caller's buffer (a synchronous
// cudaMemcpy in the NCCL path).
struct DeviceData {
  std::shared_ptr<void> memory;
  size_t bytes = 0;
  int device = TANDEM_DEVICE_CPU;
  std::function<void(void* dst, const void* src, size_t bytes)> copy;
};

struct TensorOutput {
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
  std::shared_ptr<DeviceData> device;  // set for device tensors; data is then empty
};

class HandleState {
 public:
  HandleState(tandem_handle_t id, int tensors);
  tandem_handle_t id() const { return id_; }

  // Called by the background thread once per tensor.
  void complete_one(int index, tandem_result_t result, const std::string& error,
                    TensorOutput output = {});
  // As complete_one, but a handle whose last tensor this was is not done
  // (for waiters, pollers and the callback) until publish(): the runtime finishes a
  // whole fused batch first, so that a woken waiter finds the batch's other
  // handles done instead of sleeping again on each (on a busy node every
  // such wake-up is a context switch with the runtime thread).
  // Returns whether the handle became done.
  bool complete_one_quietly(int index, tandem_result_t result, const std::string& error,
                            TensorOutput output = {});
  void publish();
  void set_received_splits(std::vector<int64_t> splits);
  // Join: the last rank to join; add_process_set: the new set's id.
  void set_int_result(int value);

  bool done() const;
  tandem_result_t result() const;  // IN_PROGRESS until done
  std::string error() const;
  // Waits until done or the deadline; returns done().
  bool wait_until(std::chrono::steady_clock::time_point deadline) const;
  void wait() const;
  // Runs the callback now (on this thread) if already done, else on completion.
  void set_callback(tandem_callback_t cb, void* user);

  // Valid once done; the handle keeps ownership.
  const TensorOutput* output(int index) const;
  const std::vector<int64_t>& received_splits() const { return received_splits_; }
  int int_result() const;
  const char* error_cstr() const;

 private:
  const tandem_handle_t id_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  int remaining_;
  // Set once, under mu_, after everything a reader needs (result_, error_,
  // outputs_) is final: frameworks poll and wait on every tensor of every
  // step, and a done handle answers them without the lock.
  std::atomic<bool> done_{false};
  tandem_result_t result_ = TANDEM_SUCCESS;
  std::string error_;
  std::vector<TensorOutput> outputs_;
  std::vector<int64_t> received_splits_;
  int int_result_ = -1;
  bool finished_ = false;  // every tensor completed; done_ once published
  tandem_callback_t callback_ = nullptr;
  void* user_ = nullptr;
};

// The handles of one process, by id. Ids are never reused.
class HandleTable {
 public:
  std::shared_ptr<HandleState> create(int tensors);
  std::shared_ptr<HandleState> find(tandem_handle_t id) const;
  void release(tandem_handle_t id);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  tandem_handle_t next_ = 1;
  std::unordered_map<tandem_handle_t, std::shared_ptr<HandleState>> handles_;
};

}  // namespace tandem::runtime
