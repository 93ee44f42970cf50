// Applying a task's plan to the calling process: CPU affinity, and memory
// binding when the plan asks for it. Called by the plugin in the task just
// before exec; affinity and the memory policy are inherited across exec.
#pragma once

#include "hwloc_loader.h"
#include "planner.h"

namespace tandem::planner {

// Binds the calling process to plan.cpus (if planned) and its memory to
// plan.numa (if plan.membind). CPUs the machine does not have are an error,
// as is a membind request hwloc cannot honour. Throws PlanError.
void apply_binding(const LoadedTopology& topology, const TaskPlan& plan);

}  // namespace tandem::planner
