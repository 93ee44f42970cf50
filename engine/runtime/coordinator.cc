#include "runtime/coordinator.h"

#include <algorithm>
#include <functional>
#include <sstream>

#include "common/errors.h"

namespace tandem::runtime {

const Request& Response::first() const {
  const std::vector<Request>& all = per_rank();
  for (size_t r = 0; r < all.size(); ++r)
    if (present[r]) return all[r];
  return all.front();
}

bool Response::any_absent() const {
  return std::find(present.begin(), present.end(), false) != present.end();
}

Coordinator::Coordinator(std::vector<int> global_ranks, size_t cache_capacity)
    : global_ranks_(std::move(global_ranks)),
      cache_(cache_capacity),
      joined_(global_ranks_.size(), false),
      join_order_(global_ranks_.size(), 0) {}

void Coordinator::set_cache_enabled(bool on) {
  cache_.set_enabled(on);
  if (!on) partial_bits_.clear();
}

std::vector<Response> Coordinator::decide(const std::vector<CycleMessage>& messages,
                                          Clock::time_point now) {
  if (messages.size() != global_ranks_.size())
    throw Error("runtime: negotiation got " + std::to_string(messages.size()) +
                " messages for a process set of " + std::to_string(global_ranks_.size()));
  ++cycle_;
  apply_invalidations(messages);
  update_joins(messages);

  std::vector<Response> out;
  take_cached(messages, now, out);
  for (size_t r = 0; r < messages.size(); ++r) {
    for (const Request& q : messages[r].requests) {
      auto [it, fresh] = table_.try_emplace(q.name);
      TableEntry& e = it->second;
      if (fresh) {
        e.per_rank.resize(global_ranks_.size());
        e.since = now;
        e.arrival = arrivals_++;
      }
      if (e.per_rank[r])
        throw Error("runtime: rank " + std::to_string(global_ranks_[r]) + " announced '" + q.name +
                    "' twice; this is a bug in tandem");
      e.per_rank[r] = q;
    }
  }
  take_table(out);

  // Join completes once every member has joined; the last to join is the
  // one that joined in the latest cycle (the highest rank among ties).
  if (std::all_of(joined_.begin(), joined_.end(), [](bool j) { return j; })) {
    Response join;
    join.kind = Response::Kind::kJoin;
    join.name = "join";
    size_t last = 0;
    for (size_t r = 0; r < join_order_.size(); ++r)
      if (join_order_[r] >= join_order_[last]) last = r;
    join.last_joined_rank = global_ranks_[last];
    out.push_back(std::move(join));
    std::fill(joined_.begin(), joined_.end(), false);
  }
  return out;
}

void Coordinator::apply_invalidations(const std::vector<CycleMessage>& messages) {
  std::vector<uint64_t> any;
  for (const CycleMessage& m : messages) {
    if (any.size() < m.invalid_bits.size()) any.resize(m.invalid_bits.size(), 0);
    for (size_t w = 0; w < m.invalid_bits.size(); ++w) any[w] |= m.invalid_bits[w];
  }
  for (size_t bit = 0; bit < any.size() * 64; ++bit) {
    if (!test_bit(any, bit)) continue;
    cache_.erase(bit);
    partial_bits_.erase(bit);
  }
}

void Coordinator::update_joins(const std::vector<CycleMessage>& messages) {
  for (size_t r = 0; r < messages.size(); ++r) {
    if (messages[r].joined && !joined_[r]) {
      joined_[r] = true;
      join_order_[r] = cycle_;
    }
  }
}

void Coordinator::take_cached(const std::vector<CycleMessage>& messages, Clock::time_point now,
                              std::vector<Response>& out) {
  if (!cache_.enabled()) return;
  // AND over the members that have not joined (a joined rank agrees to
  // everything); OR to learn which bits anyone set, for the stall check.
  size_t words = 0;
  for (const CycleMessage& m : messages) words = std::max(words, m.cache_bits.size());
  std::vector<uint64_t> all(words, ~uint64_t{0}), any(words, 0);
  bool someone_active = false;
  for (size_t r = 0; r < messages.size(); ++r) {
    const auto& bits = messages[r].cache_bits;
    for (size_t w = 0; w < words; ++w) {
      uint64_t v = w < bits.size() ? bits[w] : 0;
      any[w] |= v;
      if (!joined_[r]) all[w] &= v;
    }
    someone_active |= !joined_[r];
  }
  for (size_t bit = 0; bit < words * 64; ++bit) {
    if (!test_bit(any, bit)) {
      partial_bits_.erase(bit);
      continue;
    }
    const ResponseCache::Requests& per_rank = cache_.at(bit);
    if (!per_rank) continue;  // invalidated in this very cycle
    if (someone_active && test_bit(all, bit)) {
      partial_bits_.erase(bit);
      std::vector<bool> present(per_rank->size());
      for (size_t k = 0; k < per_rank->size(); ++k)
        present[k] = test_bit(messages[k].cache_bits, bit);
      out.push_back(cached_response(bit, per_rank, std::move(present)));
      continue;
    }
    auto [it, fresh] = partial_bits_.try_emplace(bit);
    if (fresh) it->second.since = now;
    it->second.have.assign(messages.size(), false);
    for (size_t k = 0; k < messages.size(); ++k)
      it->second.have[k] = test_bit(messages[k].cache_bits, bit);
  }
}

Response Coordinator::cached_response(size_t bit, const ResponseCache::Requests& per_rank,
                                      std::vector<bool> present) {
  Response r;
  r.name = per_rank->front().name;
  r.type = per_rank->front().type;
  r.requests = per_rank;
  r.present = std::move(present);
  r.cache_bit = bit;
  cache_.touch(bit);
  return r;
}

std::vector<Response> Coordinator::decide_bits(const std::vector<uint64_t>& ready_somewhere,
                                               const std::vector<uint64_t>& missing_somewhere,
                                               Clock::time_point now) {
  ++cycle_;
  std::vector<Response> out;
  if (!cache_.enabled()) return out;
  // Nobody has joined in a round of bits (a joined rank always sends its
  // flag), so an entry ready everywhere is one missing nowhere.
  for (size_t bit = 0; bit < ready_somewhere.size() * 64; ++bit) {
    if (!test_bit(ready_somewhere, bit)) {
      partial_bits_.erase(bit);
      continue;
    }
    const ResponseCache::Requests& per_rank = cache_.at(bit);
    if (!per_rank) continue;
    if (!test_bit(missing_somewhere, bit)) {
      partial_bits_.erase(bit);
      out.push_back(cached_response(bit, per_rank, std::vector<bool>(per_rank->size(), true)));
      continue;
    }
    auto [it, fresh] = partial_bits_.try_emplace(bit);
    if (fresh) it->second.since = now;
    it->second.have.clear();
  }
  return out;
}

bool Coordinator::wants_details(Clock::time_point now, Clock::duration after) const {
  for (const auto& [bit, p] : partial_bits_)
    if (now - p.since >= after) return true;
  return false;
}

bool Coordinator::ready(const std::vector<std::optional<Request>>& per_rank) const {
  bool any = false;
  for (size_t r = 0; r < per_rank.size(); ++r) {
    if (per_rank[r]) any = true;
    else if (!joined_[r]) return false;
  }
  return any;
}

void Coordinator::take_table(std::vector<Response>& out) {
  std::vector<std::pair<uint64_t, std::string>> now_ready;
  for (const auto& [name, e] : table_)
    if (ready(e.per_rank)) now_ready.emplace_back(e.arrival, name);
  std::sort(now_ready.begin(), now_ready.end());
  for (const auto& [arrival, name] : now_ready) {
    auto node = table_.extract(name);
    out.push_back(make_response(name, std::move(node.mapped().per_rank)));
  }
}

Response Coordinator::make_response(const std::string& name,
                                    std::vector<std::optional<Request>> per_rank) {
  Response r;
  r.name = name;
  const Request* some = nullptr;
  for (const auto& q : per_rank)
    if (q && !some) some = &*q;
  r.type = some->type;
  auto all = std::make_shared<std::vector<Request>>();
  all->reserve(per_rank.size());
  for (const auto& q : per_rank) {
    r.present.push_back(q.has_value());
    all->push_back(q ? *q : *some);
  }
  r.requests = std::move(all);
  r.error = check(r);
  if (!r.error.empty()) {
    r.error_code =
        r.error.find("joined") != std::string::npos ? TANDEM_ERR_UNSUPPORTED : TANDEM_ERR_MISMATCH;
  } else if (!r.any_absent()) {
    cache_.put(r.requests);
  }
  return r;
}

std::string Coordinator::ranks_string(const std::vector<int>& set_ranks) const {
  std::ostringstream out;
  out << (set_ranks.size() == 1 ? "rank " : "ranks ");
  for (size_t i = 0; i < set_ranks.size(); ++i)
    out << (i ? "," : "") << global_ranks_[set_ranks[i]];
  return out.str();
}

// Compares one field across the present ranks; on disagreement returns
// "allreduce 'w': ranks disagree on shape: ranks 0,1 [4,4]; rank 2 [4,5]".
std::string Coordinator::check(const Response& r) const {
  std::string label = std::string(op_type_name(r.first().type)) + " '" + r.name + "'";
  auto field = [&](const char* what,
                   const std::function<std::string(const Request&)>& value) -> std::string {
    std::vector<std::pair<std::string, std::vector<int>>> groups;
    for (size_t k = 0; k < r.per_rank().size(); ++k) {
      if (!r.present[k]) continue;
      std::string v = value(r.per_rank()[k]);
      auto g = std::find_if(groups.begin(), groups.end(), [&](auto& p) { return p.first == v; });
      if (g == groups.end()) groups.push_back({v, {static_cast<int>(k)}});
      else g->second.push_back(static_cast<int>(k));
    }
    if (groups.size() <= 1) return "";
    std::ostringstream out;
    out << label << ": ranks disagree on " << what << ": ";
    for (size_t i = 0; i < groups.size(); ++i)
      out << (i ? "; " : "") << ranks_string(groups[i].second) << ' ' << groups[i].first;
    out << ". Every rank must enqueue this name with the same " << what
        << "; use distinct names for different tensors";
    return out.str();
  };
  auto num = [](double d) {
    std::ostringstream o;
    o << d;
    return o.str();
  };
  std::string e = field("operation", [](const Request& q) { return op_type_name(q.type); });
  if (e.empty()) e = field("dtype", [](const Request& q) { return dtype_name(q.dtype); });
  if (e.empty()) e = field("device", [](const Request& q) { return std::to_string(q.device); });
  if (!e.empty()) return e;
  switch (r.first().type) {
    case OpType::kAllreduce:
    case OpType::kReducescatter:
      e = field("reduce op", [](const Request& q) { return reduce_op_name(q.op); });
      if (e.empty()) e = field("prescale", [&](const Request& q) { return num(q.prescale); });
      if (e.empty()) e = field("postscale", [&](const Request& q) { return num(q.postscale); });
      if (e.empty()) e = field("shape", [](const Request& q) { return shape_string(q.shape); });
      break;
    case OpType::kBroadcast:
      e = field("root", [](const Request& q) { return std::to_string(q.root); });
      if (e.empty()) e = field("shape", [](const Request& q) { return shape_string(q.shape); });
      break;
    case OpType::kAllgather:
    case OpType::kAlltoall: {
      auto trailing = [](const Request& q) {
        std::vector<int64_t> t(q.shape.begin() + (q.shape.empty() ? 0 : 1), q.shape.end());
        return "rank " + std::to_string(q.shape.size()) + " with trailing dims " + shape_string(t);
      };
      e = field("shape after the first dimension", trailing);
      break;
    }
    case OpType::kBarrier: break;
    case OpType::kAddProcessSet:
      e = field("process set ranks", [](const Request& q) { return shape_string(q.shape); });
      break;
    case OpType::kRemoveProcessSet:
      e = field("process set id", [](const Request& q) { return std::to_string(q.root); });
      break;
  }
  if (!e.empty()) return e;
  if (r.any_absent() && r.first().type != OpType::kAllreduce &&
      r.first().type != OpType::kBarrier) {
    std::vector<int> absent;
    for (size_t k = 0; k < r.present.size(); ++k)
      if (!r.present[k]) absent.push_back(static_cast<int>(k));
    return label + ": cannot run while " + ranks_string(absent) +
           " joined; only allreduce and barrier accept joined ranks. Finish the collective on "
           "every rank before calling join";
  }
  return "";
}

std::vector<Coordinator::Pending> Coordinator::pending() const {
  std::vector<Pending> out;
  auto add = [&](const std::string& name, OpType type, const std::vector<bool>& have,
                 Clock::time_point since) {
    Pending p{name, type, {}, {}, since};
    for (size_t r = 0; r < have.size(); ++r) {
      if (have[r]) p.have.push_back(global_ranks_[r]);
      else if (!joined_[r]) p.missing.push_back(global_ranks_[r]);
    }
    if (!p.missing.empty()) out.push_back(std::move(p));
  };
  for (const auto& [name, e] : table_) {
    std::vector<bool> have;
    OpType type = OpType::kAllreduce;
    for (const auto& q : e.per_rank) {
      have.push_back(q.has_value());
      if (q) type = q->type;
    }
    add(name, type, have, e.since);
  }
  for (const auto& [bit, p] : partial_bits_) {
    const ResponseCache::Requests& per_rank = cache_.at(bit);
    if (per_rank && !p.have.empty())
      add(per_rank->front().name, per_rank->front().type, p.have, p.since);
  }
  return out;
}

std::optional<std::vector<int>> Coordinator::missing(const std::string& name) const {
  auto it = table_.find(name);
  if (it == table_.end()) return std::nullopt;
  std::vector<int> out;
  for (size_t r = 0; r < it->second.per_rank.size(); ++r)
    if (!it->second.per_rank[r] && !joined_[r]) out.push_back(global_ranks_[r]);
  return out;
}

std::optional<std::vector<int>> Coordinator::missing_bit(size_t bit) const {
  auto it = partial_bits_.find(bit);
  if (it == partial_bits_.end() || it->second.have.empty()) return std::nullopt;
  std::vector<int> out;
  for (size_t r = 0; r < it->second.have.size(); ++r)
    if (!it->second.have[r] && !joined_[r]) out.push_back(global_ranks_[r]);
  return out;
}

std::vector<int> Coordinator::not_joined() const {
  std::vector<int> out;
  for (size_t r = 0; r < joined_.size(); ++r)
    if (!joined_[r]) out.push_back(global_ranks_[r]);
  return out;
}

}  // namespace tandem::runtime
