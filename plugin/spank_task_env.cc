#include "spank_task_env.h"

#include <vector>

#include "plugin_error.h"

namespace tandem::plugin {

std::optional<std::string> SpankTaskEnv::get(const std::string& name) const {
  std::vector<char> buf(4096);
  for (;;) {
    const spank_err_t rc =
        spank_getenv(sp_, name.c_str(), buf.data(), static_cast<int>(buf.size()));
    if (rc == ESPANK_SUCCESS) return std::string(buf.data());
    if (rc == ESPANK_ENV_NOEXIST) return std::nullopt;
    if (rc != ESPANK_NOSPACE || buf.size() > (1u << 24)) {
      throw PluginError("reading " + name + " from the task environment: " + spank_strerror(rc));
    }
    buf.resize(buf.size() * 4);
  }
}

void SpankTaskEnv::set(const std::string& name, const std::string& value) {
  const spank_err_t rc = spank_setenv(sp_, name.c_str(), value.c_str(), 1);
  if (rc != ESPANK_SUCCESS) {
    throw PluginError("setting " + name + " in the task environment: " + spank_strerror(rc));
  }
}

}  // namespace tandem::plugin
