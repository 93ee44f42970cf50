// One process set as this rank sees it: its members, its data path (null
// when this rank is not a member), its negotiation state and the tensors
// this rank has enqueued in it and that have not completed yet.
//
// API threads add tensors (under mu); the background thread announces them,
// negotiates and completes them.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/coordinator.h"
#include "runtime/data_path.h"
#include "runtime/handle.h"
#include "runtime/request.h"

namespace tandem::runtime {

struct TensorEntry {
  Request request;
  const void* input = nullptr;
  void* output = nullptr;
  void* stream = nullptr;  // device tensors: the framework's cudaStream_t (NULL: default)
  std::shared_ptr<HandleState> handle;
  int index = 0;  // position in the handle's group
  enum class Announced { kNo, kByBit, kInFull } announced = Announced::kNo;
  size_t bit = 0;
  // Set only with the straggler report on (straggler.h).
  std::chrono::steady_clock::time_point enqueued{};
};

class ProcessSet {
 public:
  ProcessSet(int id, std::vector<int> global_ranks, std::unique_ptr<DataPath> data_path,
             size_t cache_capacity);

  int id() const { return id_; }
  const std::vector<int>& global_ranks() const { return global_ranks_; }
  bool member() const { return data_path_ != nullptr; }
  int set_rank_of(int global_rank) const;  // -1 when not a member
  DataPath& data_path() { return *data_path_; }
  Coordinator& coordinator() { return coordinator_; }

  // Hashed: every tensor of every step is looked up here a few times.
  // Entries stay where they are until the background thread erases them.
  using Pending = std::unordered_map<std::string, TensorEntry>;
  // Adds a tensor this rank enqueued (mu held; its name is not pending).
  void add_locked(TensorEntry e);

  std::mutex mu;
  Pending pending;                  // by name
  std::vector<TensorEntry*> fresh;  // in pending, not yet announced, in order

 private:
  int id_;
  std::vector<int> global_ranks_;
  std::unique_ptr<DataPath> data_path_;
  Coordinator coordinator_;
};

}  // namespace tandem::runtime
