// The plugin log's configuration (plugin_log.h), apart from the Slurm sink so
// that the unit tests link it without Slurm.
#include "common/errors.h"
#include "plugin_error.h"
#include "plugin_log.h"

namespace tandem::plugin {

log::Config log_config_from(const TaskEnv& env) {
  auto get = [&](const char* name) { return env.get(name).value_or(""); };
  const std::string level = get(log::kLevelVariable);
  const std::string subsystems = get(log::kSubsysVariable);
  const std::string horovod = get(log::kHorovodLevelVariable);
  try {
    return log::parse_config(level.c_str(), subsystems.c_str(), horovod.c_str());
  } catch (const InvalidArgument& e) { throw PluginError(e.what()); }
}

}  // namespace tandem::plugin
