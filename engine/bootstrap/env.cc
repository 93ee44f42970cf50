#include "bootstrap/env.h"

#include "common/errors.h"
#include "common/settings.h"

namespace tandem {
namespace env {
namespace {

// The bootstrap's failures are BootstrapErrors, with the reader's message.
template <typename F>
auto as_bootstrap_error(F&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const InvalidArgument& e) { throw BootstrapError(e.what()); }
}

}  // namespace

std::optional<std::string> get(const char* name) {
  if (find_environment_fact(name) != nullptr) return environment_fact(name);
  return env_value(name);
}

std::optional<int> get_int(const char* name) {
  const auto v = as_bootstrap_error([&] { return env_int_if_set(name); });
  if (!v) return std::nullopt;
  return static_cast<int>(*v);
}

}  // namespace env

std::chrono::milliseconds bootstrap_timeout() {
  return env::as_bootstrap_error([] { return env_milliseconds("TANDEM_BOOTSTRAP_TIMEOUT"); });
}

}  // namespace tandem
