// The response cache of one process set. Once a tensor has been negotiated
// through the full exchange, every rank stores what every rank asked for
// under a bit position. In later steps a rank whose request is unchanged
// announces it by setting that bit; the bits of all ranks are ANDed, and an
// entry whose bit every rank set is ready without sending or comparing any
// request. A rank whose request changed (new shape, say) sets the entry's
// invalid bit; the invalid bits are ORed and every rank drops those entries
// in the same cycle, so the tensor goes through full negotiation again.
//
// All ranks insert, touch and evict in the same order (responses run in the
// same order everywhere), so their caches stay identical without any
// synchronisation of their own. Eviction is least recently used.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/request.h"

namespace tandem::runtime {

class ResponseCache {
 public:
  explicit ResponseCache(size_t capacity);

  enum class State { kMiss, kHit, kStale };
  struct Lookup {
    State state = State::kMiss;
    size_t bit = 0;
  };
  // Compares `mine` with what this rank (set rank `my_rank`) asked for when
  // the entry of the same name was negotiated.
  Lookup lookup(const Request& mine, int my_rank) const;

  using Requests = std::shared_ptr<const std::vector<Request>>;
  // The requests of every set rank for the entry at `bit`; null if free.
  const Requests& at(size_t bit) const;
  // Stores (or refreshes) the negotiated requests of a tensor, by set rank,
  // evicting the least recently used entry when full. No-op when disabled.
  void put(const Requests& per_rank);
  // Marks the entry at `bit` as just used.
  void touch(size_t bit);
  void erase(size_t bit);

  bool enabled() const { return capacity_ > 0 && !off_; }
  // Autotune's switch (autotune.h): off empties the cache and keeps it
  // empty; on again uses the capacity it was made with. Every rank switches
  // in the same round, so the caches stay identical.
  void set_enabled(bool on);
  size_t size() const { return by_name_.size(); }
  // One past the highest bit in use (0 when empty): the length of the bit
  // vectors a round needs, the same on every rank.
  size_t span() const;
  size_t capacity() const { return capacity_; }

 private:
  struct Slot {
    Requests per_rank;
    std::list<size_t>::iterator lru;  // position in lru_
    bool used = false;
  };
  size_t capacity_;
  bool off_ = false;
  std::vector<Slot> slots_;                          // by bit
  std::unordered_map<std::string, size_t> by_name_;  // name -> bit
  std::list<size_t> lru_;                            // front: most recent
  std::vector<size_t> free_;                         // free bits, lowest last
};

}  // namespace tandem::runtime
