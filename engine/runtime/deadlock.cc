#include "runtime/deadlock.h"

#include <sstream>

#include "runtime/request.h"

namespace tandem::runtime {
namespace {

std::string rank_list(const std::vector<int32_t>& ranks) {
  std::ostringstream out;
  out << (ranks.size() == 1 ? "rank " : "ranks ");
  for (size_t i = 0; i < ranks.size(); ++i) out << (i ? "," : "") << ranks[i];
  return out.str();
}

}  // namespace

std::string describe_wait(const Wait& w) {
  if (w.type == Wait::kJoin) return "join";
  const auto type = static_cast<OpType>(w.type);
  switch (type) {
    // Their names are the runtime's own: the operation says it all.
    case OpType::kBarrier:
    case OpType::kAddProcessSet:
    case OpType::kRemoveProcessSet: return op_type_name(type);
    default:
      return std::string(op_type_name(type)) + " '" + w.name + "'" +
             (w.more ? " (and " + std::to_string(w.more) + " more of its group)" : "");
  }
}

DeadlockVerdict find_deadlock(const std::vector<std::vector<Wait>>& waits_by_rank) {
  const size_t n = waits_by_rank.size();
  std::vector<bool> can_go_on(n);
  for (size_t r = 0; r < n; ++r) can_go_on[r] = waits_by_rank[r].empty();
  // Least fixed point: add a blocked rank once one of its waits misses only
  // ranks that can go on.
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t r = 0; r < n; ++r) {
      if (can_go_on[r]) continue;
      for (const Wait& w : waits_by_rank[r]) {
        bool possible = true;
        for (int32_t m : w.missing)
          if (m < 0 || static_cast<size_t>(m) >= n || !can_go_on[static_cast<size_t>(m)])
            possible = false;
        if (possible) {
          can_go_on[r] = true;
          grew = true;
          break;
        }
      }
    }
  }
  DeadlockVerdict v;
  for (size_t r = 0; r < n; ++r)
    if (!can_go_on[r]) v.ranks.push_back(static_cast<int>(r));
  if (v.ranks.empty()) return v;
  std::ostringstream msg;
  msg << "deadlock: ranks wait in collectives that can never run, because each waits for a "
         "rank that itself waits in something else: ";
  bool first = true;
  for (int r : v.ranks) {
    for (const Wait& w : waits_by_rank[static_cast<size_t>(r)]) {
      msg << (first ? "" : "; ") << "rank " << r << " waits in " << describe_wait(w)
          << " (process set " << w.set << "), not yet started by " << rank_list(w.missing);
      first = false;
    }
  }
  msg << ". The ranks took different paths through the program, or a name differs between "
         "ranks (an automatically generated one drifts when ranks make different calls): "
         "every rank of a process set must start the same collectives with the same names. "
         "Every rank of the job gets this error; the tandem runtime stops (shut down and "
         "init again to go on)";
  v.message = msg.str();
  return v;
}

}  // namespace tandem::runtime
