// The process-set table: every process set this runtime knows, by id, the
// global set (id 0) first. API threads look sets up (enqueue, the ranks of
// a set); only the background thread adds and removes them, at the same
// point of the global set's negotiated order on every rank (process set
// changes are negotiated like tensors), so ids agree everywhere.
//
// Its mutex is a leaf of the runtime's lock order (runtime.h): nothing else
// is locked while it is held, and sets are handed out as shared_ptrs.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "runtime/data_path.h"
#include "runtime/process_set.h"

namespace tandem::runtime {

class ProcessSetTable {
 public:
  // Creates the global set over `size` ranks with the factory's data path
  // (a collective over the world).
  ProcessSetTable(int size, DataPathFactory& factory, size_t cache_capacity);

  // nullptr when there is no set `id`.
  std::shared_ptr<ProcessSet> find(int id) const;
  // Every set, sorted by id (the order the background thread visits them).
  std::vector<std::shared_ptr<ProcessSet>> snapshot() const;
  std::shared_ptr<ProcessSet> global() const { return find(TANDEM_GLOBAL_PROCESS_SET); }

  // Background thread only. The id of the set over `ranks` (global ranks,
  // ascending): an existing one, or a new one whose data path the factory
  // makes (a collective over the world).
  int add(const std::vector<int>& ranks);
  // Takes set `id` out of the table and returns it (its pending tensors are
  // the caller's to fail). Throws InvalidArgument for an unknown id or the
  // global set.
  std::shared_ptr<ProcessSet> remove(int id);

 private:
  DataPathFactory& factory_;
  const size_t cache_capacity_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<ProcessSet>> sets_;  // sorted by id
  int next_id_ = 1;
};

}  // namespace tandem::runtime
