#include "runtime/response_cache.h"

namespace tandem::runtime {

ResponseCache::ResponseCache(size_t capacity) : capacity_(capacity), slots_(capacity) {
  // Hand out low bits first so that bit vectors stay short.
  for (size_t i = capacity; i > 0; --i) free_.push_back(i - 1);
}

void ResponseCache::set_enabled(bool on) {
  if (!on)
    for (size_t bit = 0; bit < slots_.size(); ++bit)
      if (slots_[bit].used) erase(bit);
  off_ = !on;
}

ResponseCache::Lookup ResponseCache::lookup(const Request& mine, int my_rank) const {
  auto it = by_name_.find(mine.name);
  if (it == by_name_.end()) return {};
  const Slot& slot = slots_[it->second];
  bool same = my_rank >= 0 && static_cast<size_t>(my_rank) < slot.per_rank->size() &&
              (*slot.per_rank)[my_rank] == mine;
  return {same ? State::kHit : State::kStale, it->second};
}

const ResponseCache::Requests& ResponseCache::at(size_t bit) const {
  static const Requests kNone;
  if (bit >= slots_.size() || !slots_[bit].used) return kNone;
  return slots_[bit].per_rank;
}

void ResponseCache::put(const Requests& per_rank) {
  if (!enabled() || !per_rank || per_rank->empty()) return;
  const std::string& name = per_rank->front().name;
  auto it = by_name_.find(name);
  if (it != by_name_.end()) {
    slots_[it->second].per_rank = per_rank;
    touch(it->second);
    return;
  }
  if (free_.empty()) erase(lru_.back());
  size_t bit = free_.back();
  free_.pop_back();
  Slot& slot = slots_[bit];
  slot.per_rank = per_rank;
  slot.used = true;
  lru_.push_front(bit);
  slot.lru = lru_.begin();
  by_name_[name] = bit;
}

size_t ResponseCache::span() const {
  for (size_t bit = slots_.size(); bit > 0; --bit)
    if (slots_[bit - 1].used) return bit;
  return 0;
}

void ResponseCache::touch(size_t bit) {
  if (bit >= slots_.size() || !slots_[bit].used) return;
  lru_.splice(lru_.begin(), lru_, slots_[bit].lru);
}

void ResponseCache::erase(size_t bit) {
  if (bit >= slots_.size() || !slots_[bit].used) return;
  Slot& slot = slots_[bit];
  by_name_.erase(slot.per_rank->front().name);
  lru_.erase(slot.lru);
  slot = Slot{};
  // Keep free_ sorted high-to-low so the lowest free bit is reused first.
  auto pos = free_.begin();
  while (pos != free_.end() && *pos > bit) ++pos;
  free_.insert(pos, bit);
}

}  // namespace tandem::runtime
