// Human and machine renderings of a plan: one line per task for the plugin's
// verbose mode, a block per task and JSON for tandem-bind.
#pragma once

#include <string>

#include "planner.h"

namespace tandem::planner {

// "gpu=0(0000:13:00.0)[planner] cpus=0-3,16-19[planner] numa=0 nic=mlx5_0[planner]"
std::string describe(const TaskPlan& task);

// tandem-bind's text output: one block per task, then the node-wide parts.
std::string to_text(const NodePlan& plan, const Policy& policy);

// The same as JSON (schema in docs/binding.md).
std::string to_json(const NodePlan& plan, const Policy& policy);

}  // namespace tandem::planner
