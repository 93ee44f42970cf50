#include "runtime/stall_inspector.h"

#include <sstream>

namespace tandem::runtime {
namespace {

std::string ranks(const std::vector<int>& r) {
  std::ostringstream out;
  for (size_t i = 0; i < r.size(); ++i) out << (i ? "," : "") << r[i];
  return out.str();
}

}  // namespace

std::vector<std::string> StallInspector::inspect(const std::vector<Coordinator::Pending>& pending,
                                                 Clock::time_point now, std::string* fatal) {
  std::vector<std::string> warnings;
  if (check_ <= 0) return warnings;
  std::set<std::string> still;
  for (const auto& p : pending) {
    double waited = std::chrono::duration<double>(now - p.since).count();
    if (waited < check_) continue;
    still.insert(p.name);
    std::ostringstream msg;
    msg << op_type_name(p.type) << " '" << p.name << "' was enqueued by rank(s) " << ranks(p.have)
        << " but not by rank(s) " << ranks(p.missing) << " for " << static_cast<int>(waited)
        << " s. Those ranks may be stuck, or enqueue different tensors (check the names and "
           "the control flow of every rank)";
    if (shutdown_ > 0 && waited >= shutdown_ && fatal && fatal->empty())
      *fatal = "stall: " + msg.str() + "; giving up after TANDEM_STALL_SHUTDOWN_TIME_SECONDS=" +
               std::to_string(static_cast<int>(shutdown_));
    if (warned_.insert(p.name).second) warnings.push_back(msg.str());
  }
  // Forget tensors that are no longer stalled so a later stall warns again.
  for (auto it = warned_.begin(); it != warned_.end();)
    it = still.count(*it) ? std::next(it) : warned_.erase(it);
  return warnings;
}

}  // namespace tandem::runtime
