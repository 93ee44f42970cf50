// TaskEnv over spank_getenv/spank_setenv: the job environment that slurmstepd
// execs the task with.
#pragma once

#include "spank_api.h"

#include "task_env.h"

namespace tandem::plugin {

class SpankTaskEnv : public TaskEnv {
 public:
  explicit SpankTaskEnv(spank_t sp) : sp_(sp) {}
  std::optional<std::string> get(const std::string& name) const override;
  void set(const std::string& name, const std::string& value) override;

 private:
  spank_t sp_;
};

}  // namespace tandem::plugin
