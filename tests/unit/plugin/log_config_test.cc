// The plugin reads the log's variables from the job's environment
// (plugin_log.h); a bad value is a PluginError (srun prints it as
// "tandem: <message>") naming the variable and the value.
#include <gtest/gtest.h>

#include "plugin_error.h"
#include "plugin_log.h"

namespace tandem::plugin {
namespace {

TEST(LogConfig, FromTheJobEnvironment) {
  MapTaskEnv env;
  EXPECT_EQ(log_config_from(env), log::Config{});
  env.vars = {{"TANDEM_LOG", "debug"}, {"TANDEM_LOG_SUBSYS", "plugin,tcp"}};
  const log::Config c = log_config_from(env);
  EXPECT_EQ(c.level, log::Level::kDebug);
  EXPECT_TRUE(c.enables(log::Level::kDebug, log::Subsys::plugin));
  EXPECT_FALSE(c.enables(log::Level::kDebug, log::Subsys::shm));
  env.vars = {{"HOROVOD_LOG_LEVEL", "info"}};
  EXPECT_EQ(log_config_from(env).level, log::Level::kInfo);
}

TEST(LogConfig, BadValueIsAPluginErrorNamingIt) {
  MapTaskEnv env;
  env.vars = {{"TANDEM_LOG_SUBSYS", "slurm"}};
  try {
    log_config_from(env);
    FAIL() << "accepted";
  } catch (const PluginError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("TANDEM_LOG_SUBSYS='slurm': expected a comma-separated "
                                          "list of bootstrap, elastic, shm, tcp",
                                          0),
              0u)
        << e.what();
  }
}

}  // namespace
}  // namespace tandem::plugin
