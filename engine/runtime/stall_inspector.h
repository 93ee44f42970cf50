// The stall inspector: on a set's first rank, warns when some ranks have
// enqueued a tensor and others have not for a while (a rank stuck in a
// data loader, or code that enqueues different tensors on different ranks),
// naming the tensor and the missing ranks. Each tensor is warned about once
// per stall. Optionally reports a stall as fatal after a longer time.
#pragma once

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "runtime/coordinator.h"

namespace tandem::runtime {

class StallInspector {
 public:
  using Clock = std::chrono::steady_clock;
  StallInspector(double check_seconds, double shutdown_seconds)
      : check_(check_seconds), shutdown_(shutdown_seconds) {}

  // Returns the warnings to print now (empty when nothing new). Sets
  // *fatal to a message when a stall passed the shutdown time.
  std::vector<std::string> inspect(const std::vector<Coordinator::Pending>& pending,
                                   Clock::time_point now, std::string* fatal);

 private:
  double check_;
  double shutdown_;
  std::set<std::string> warned_;
};

}  // namespace tandem::runtime
