#include "bootstrap/env.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/errors.h"
#include "common/settings.h"

namespace tandem {
namespace env {

std::optional<std::string> get(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

std::optional<int> get_int(const char* name, int min, int max) {
  auto v = get(name);
  if (!v) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long x = std::strtol(v->c_str(), &end, 10);
  if (errno != 0 || end == v->c_str() || *end != '\0' || x < min || x > max)
    throw BootstrapError(std::string(name) + "='" + *v + "' is not an integer in [" +
                         std::to_string(min) + ", " + std::to_string(max) + "]: fix or unset it");
  return static_cast<int>(x);
}

std::chrono::milliseconds get_seconds(const char* name, std::chrono::milliseconds fallback) {
  auto v = get(name);
  if (!v) return fallback;
  errno = 0;
  char* end = nullptr;
  double s = std::strtod(v->c_str(), &end);
  if (errno != 0 || end == v->c_str() || *end != '\0' || !std::isfinite(s) || s <= 0 || s > 86400)
    throw BootstrapError(std::string(name) + "='" + *v +
                         "' is not a number of seconds in (0, 86400] (e.g. 30 or 2.5): "
                         "fix or unset it");
  const auto ms = std::chrono::milliseconds(static_cast<long long>(std::ceil(s * 1000)));
  if (ms != fallback) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", fallback.count() / 1000.0);
    note_setting(name, *v, text);
  }
  return ms;
}

}  // namespace env

std::chrono::milliseconds bootstrap_timeout() {
  return env::get_seconds("TANDEM_BOOTSTRAP_TIMEOUT", std::chrono::seconds(60));
}

}  // namespace tandem
