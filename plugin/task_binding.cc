#include "task_binding.h"

namespace tandem::plugin {

BindingResult bind_task(const Config& config, const TaskIdentity& /*id*/, TaskEnv& /*env*/) {
  if (config.binding == "none") return {"binding: none (binding=none in plugstack.conf)"};
  return {"binding: off (planner not integrated)"};
}

}  // namespace tandem::plugin
