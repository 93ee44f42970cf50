#include "runtime/process_set.h"

#include <algorithm>

namespace tandem::runtime {

ProcessSet::ProcessSet(int id, std::vector<int> global_ranks, std::unique_ptr<DataPath> data_path,
                       size_t cache_capacity)
    : id_(id),
      global_ranks_(std::move(global_ranks)),
      data_path_(std::move(data_path)),
      coordinator_(global_ranks_, cache_capacity) {}

int ProcessSet::set_rank_of(int global_rank) const {
  auto it = std::find(global_ranks_.begin(), global_ranks_.end(), global_rank);
  return it == global_ranks_.end() ? -1 : static_cast<int>(it - global_ranks_.begin());
}

void ProcessSet::add_locked(TensorEntry e) {
  auto it = pending.emplace(e.request.name, std::move(e)).first;
  fresh.push_back(&it->second);
}

}  // namespace tandem::runtime
