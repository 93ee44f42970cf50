// The NCCL communicators of this process, one per process set, created the
// first time the set runs a GPU operation and kept until the set is removed.
//
// Lifecycle of an entry: add() stores the set's unique id (from
// exchange_unique_id); get() creates the communicator on first use through
// the factory; a failed creation is remembered, so the next operation on the
// set fails at once with the same error instead of trying an id that NCCL has
// already consumed (an id is single use: add() refuses one seen before).
// abort_all() is the lost-peer path: every communicator is aborted and every
// later get() fails with the reason, which names the lost rank.
//
// get() is called by the runtime's background thread; abort_all() may come
// from any thread (the CPU path's failure detector).
#pragma once

#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "gpu/unique_id_exchange.h"

namespace tandem {
namespace gpu {

// What the cache needs of a communicator; NcclCommunicator is the real one.
class DeviceComm {
 public:
  virtual ~DeviceComm() = default;
  // Makes pending and later operations fail with reason; callable from any
  // thread, more than once.
  virtual void abort(const std::string& reason) = 0;
};

struct CommSpec {
  int set_id = 0;
  std::vector<int> members;  // world ranks, ascending
  int index = 0;             // this rank's position in members: its NCCL rank
  UniqueId id{};
};

class CommunicatorCache {
 public:
  using Factory = std::function<std::shared_ptr<DeviceComm>(const CommSpec&)>;
  explicit CommunicatorCache(Factory factory) : factory_(std::move(factory)) {}

  // my_rank must be one of members. Throws InvalidArgument for a set id
  // already present or an id already used.
  void add(int set_id, std::vector<int> members, int my_rank, const UniqueId& id);
  // Forgets the set; its communicator is destroyed when the last holder
  // (an operation in flight) lets go.
  void remove(int set_id);
  // The set's communicator, created now if this is its first use. Throws
  // InvalidArgument for an unknown set, or the creation/abort error.
  std::shared_ptr<DeviceComm> get(int set_id);
  void abort_all(const std::string& reason);

  int creations() const;  // how many communicators the factory made

 private:
  struct Entry {
    CommSpec spec;
    std::shared_ptr<DeviceComm> comm;
    std::exception_ptr failure;
  };
  Factory factory_;
  mutable std::mutex mu_;
  std::map<int, Entry> entries_;
  std::set<UniqueId> used_ids_;
  std::exception_ptr aborted_;  // set by abort_all: nothing is created after it
  int creations_ = 0;
};

}  // namespace gpu
}  // namespace tandem
