#include "runtime/process_set_table.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "common/errors.h"

namespace tandem::runtime {

ProcessSetTable::ProcessSetTable(int size, DataPathFactory& factory, size_t cache_capacity)
    : factory_(factory), cache_capacity_(cache_capacity) {
  std::vector<int> all(static_cast<size_t>(size));
  std::iota(all.begin(), all.end(), 0);
  auto dp = factory_.create(all);
  if (!dp) throw Error("runtime: the data path gave no communicator for the world");
  sets_.push_back(std::make_shared<ProcessSet>(0, all, std::move(dp), cache_capacity_));
}

std::shared_ptr<ProcessSet> ProcessSetTable::find(int id) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& s : sets_)
    if (s->id() == id) return s;
  return nullptr;
}

std::vector<std::shared_ptr<ProcessSet>> ProcessSetTable::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sets_;
}

int ProcessSetTable::add(const std::vector<int>& ranks) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : sets_)
      if (s->global_ranks() == ranks) return s->id();
  }
  // Outside the lock: a collective over the world, which may take long.
  auto dp = factory_.create(ranks);
  auto set = std::make_shared<ProcessSet>(next_id_++, ranks, std::move(dp), cache_capacity_);
  std::lock_guard<std::mutex> lock(mu_);
  sets_.push_back(set);
  return set->id();
}

std::shared_ptr<ProcessSet> ProcessSetTable::remove(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(sets_.begin(), sets_.end(), [&](const auto& s) { return s->id() == id; });
  if (it == sets_.end() || id == TANDEM_GLOBAL_PROCESS_SET)
    throw InvalidArgument("remove_process_set: process set " + std::to_string(id) +
                          " does not exist");
  auto victim = *it;
  sets_.erase(it);
  return victim;
}

}  // namespace tandem::runtime
