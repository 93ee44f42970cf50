#include "common/settings.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <strings.h>

#include "common/errors.h"

namespace tandem {
namespace {

const char* value_of(const char* name) {
  const char* v = std::getenv(name);
  return (v == nullptr || *v == '\0') ? nullptr : v;
}

[[noreturn]] void reject(const char* name, const char* value, const std::string& expected) {
  throw InvalidArgument(std::string(name) + "='" + value + "': expected " + expected +
                        "; fix or unset the variable");
}

std::string range_text(double min, double max) {
  auto fmt = [](double x) {
    std::string s = std::to_string(x);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  };
  return "between " + fmt(min) + " and " + fmt(max);
}

struct Notes {
  std::mutex mu;
  std::vector<std::string> names;
  std::vector<std::string> lines;
};

Notes& notes() {
  static Notes* n = new Notes();  // never destroyed: read until exit
  return *n;
}

std::string number_text(double x) {
  char text[64];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

}  // namespace

void note_setting(const std::string& name, const std::string& value,
                  const std::string& default_text) {
  Notes& n = notes();
  std::lock_guard<std::mutex> lock(n.mu);
  for (const std::string& known : n.names)
    if (known == name) return;
  n.names.push_back(name);
  n.lines.push_back(name + "=" + value + " (default " +
                    (default_text.empty() ? std::string("unset") : default_text) + ")");
}

std::vector<std::string> settings_differing_from_defaults() {
  Notes& n = notes();
  std::lock_guard<std::mutex> lock(n.mu);
  return n.lines;
}

int64_t parse_int_setting(const char* name, const char* v, int64_t min, int64_t max) {
  const std::string expected =
      "an integer between " + std::to_string(min) + " and " + std::to_string(max);
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  if (std::isspace(static_cast<unsigned char>(*v)) || end == v || *end != '\0' || errno == ERANGE)
    reject(name, v, expected);
  if (x < min || x > max) reject(name, v, expected);
  return x;
}

double parse_double_setting(const char* name, const char* v, double min, double max) {
  const std::string expected = "a number " + range_text(min, max);
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v, &end);
  if (std::isspace(static_cast<unsigned char>(*v)) || end == v || *end != '\0' || errno == ERANGE ||
      !std::isfinite(x))
    reject(name, v, expected);
  if (x < min || x > max) reject(name, v, expected);
  return x;
}

bool parse_bool_setting(const char* name, const char* v) {
  for (const char* t : {"1", "true", "yes", "on"})
    if (strcasecmp(v, t) == 0) return true;
  for (const char* f : {"0", "false", "no", "off"})
    if (strcasecmp(v, f) == 0) return false;
  reject(name, v, "1/0, true/false, yes/no or on/off");
}

int64_t env_int(const char* name, int64_t fallback, int64_t min, int64_t max) {
  const char* v = value_of(name);
  if (v == nullptr) return fallback;
  const int64_t x = parse_int_setting(name, v, min, max);
  if (x != fallback) note_setting(name, v, std::to_string(fallback));
  return x;
}

double env_double(const char* name, double fallback, double min, double max) {
  const char* v = value_of(name);
  if (v == nullptr) return fallback;
  const double x = parse_double_setting(name, v, min, max);
  if (x != fallback) note_setting(name, v, number_text(fallback));
  return x;
}

std::string env_string(const char* name, const std::string& fallback) {
  const char* v = value_of(name);
  if (v == nullptr) return fallback;
  if (fallback != v) note_setting(name, v, fallback);
  return v;
}

std::chrono::milliseconds timeout_from_environment() {
  // Upper bound: a week, so that the conversion to milliseconds cannot
  // overflow and a typo like 3e30 is caught. The lower bound keeps at least
  // one millisecond of waiting.
  const double seconds = env_double(kTimeoutVariable, kDefaultTimeoutSeconds, 0.001, 7 * 86400.0);
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000.0)));
}

}  // namespace tandem
