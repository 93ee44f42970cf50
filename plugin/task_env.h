// The environment of the task being set up, as an interface so the code that
// fills it (identity, injection, binding) is tested without slurmstepd.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace tandem::plugin {

class TaskEnv {
 public:
  virtual ~TaskEnv() = default;
  virtual std::optional<std::string> get(const std::string& name) const = 0;
  // Sets or overwrites. Throws PluginError if the variable cannot be set.
  virtual void set(const std::string& name, const std::string& value) = 0;
};

// For tests and dry runs.
class MapTaskEnv : public TaskEnv {
 public:
  std::map<std::string, std::string> vars;
  std::optional<std::string> get(const std::string& name) const override {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  }
  void set(const std::string& name, const std::string& value) override { vars[name] = value; }
};

}  // namespace tandem::plugin
