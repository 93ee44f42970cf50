#include "common/settings.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
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

const SettingDecl& setting_declaration(const char* name) {
  const SettingDecl* d = find_setting(name);
  if (d == nullptr)
    throw Error(std::string("setting ") + name +
                " is not declared in common/settings_table.h (a bug: declare it there)");
  return *d;
}

namespace {

const SettingDecl& declared_as(const char* name, std::initializer_list<SettingType> types) {
  const SettingDecl& d = setting_declaration(name);
  for (SettingType t : types)
    if (d.type == t) return d;
  throw Error(std::string("setting ") + name +
              " is read as another type than common/settings_table.h declares (a bug)");
}

// The declared default, parsed like a value; a declaration without one read
// by a reader that needs one is a bug (env_int_if_set is for those).
const char* default_of(const SettingDecl& d) {
  if (*d.default_text == '\0')
    throw Error(std::string("setting ") + d.name +
                " has no default in common/settings_table.h but is read as if it had (a bug)");
  return d.default_text;
}

int64_t int_bound(double x) { return static_cast<int64_t>(x); }

}  // namespace

int64_t env_int(const char* name) {
  const SettingDecl& d = declared_as(name, {SettingType::kInt, SettingType::kBytes});
  const int64_t fallback =
      parse_int_setting(d.name, default_of(d), int_bound(d.min), int_bound(d.max));
  const char* v = value_of(name);
  if (v == nullptr) return fallback;
  const int64_t x = parse_int_setting(name, v, int_bound(d.min), int_bound(d.max));
  if (x != fallback) note_setting(name, v, d.default_text);
  return x;
}

std::optional<int64_t> env_int_if_set(const char* name) {
  const SettingDecl& d = declared_as(name, {SettingType::kInt, SettingType::kBytes});
  const char* v = value_of(name);
  if (v == nullptr) {
    if (*d.default_text == '\0') return std::nullopt;
    return parse_int_setting(d.name, d.default_text, int_bound(d.min), int_bound(d.max));
  }
  return parse_int_setting(name, v, int_bound(d.min), int_bound(d.max));
}

double env_double(const char* name) {
  const SettingDecl& d = declared_as(name, {SettingType::kNumber, SettingType::kSeconds});
  const double fallback = parse_double_setting(d.name, default_of(d), d.min, d.max);
  const char* v = value_of(name);
  if (v == nullptr) return fallback;
  const double x = parse_double_setting(name, v, d.min, d.max);
  if (x != fallback) note_setting(name, v, number_text(fallback));
  return x;
}

std::chrono::milliseconds env_milliseconds(const char* name) {
  declared_as(name, {SettingType::kSeconds});
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(env_double(name) * 1000.0)));
}

bool env_bool(const char* name) {
  const SettingDecl& d = declared_as(name, {SettingType::kBool});
  const bool fallback = parse_bool_setting(d.name, default_of(d));
  const char* v = value_of(name);
  if (v == nullptr) return fallback;
  const bool x = parse_bool_setting(name, v);
  if (x != fallback) note_setting(name, v, d.default_text);
  return x;
}

std::string env_string(const char* name) {
  const SettingDecl& d = declared_as(name, {SettingType::kString, SettingType::kEnum});
  const char* v = value_of(name);
  if (v == nullptr) return d.default_text;
  if (v != std::string(d.default_text)) note_setting(name, v, d.default_text);
  return v;
}

std::optional<std::string> env_value(const char* name) {
  setting_declaration(name);
  const char* v = value_of(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

const char* declared_getenv(const char* name) {
  setting_declaration(name);
  return std::getenv(name);
}

std::optional<std::string> environment_fact(const char* name) {
  if (find_environment_fact(name) == nullptr)
    throw Error(std::string(name) +
                " is not listed in kEnvironmentFacts (common/settings_table.h) (a bug: list it "
                "with its reason, or declare it as a setting)");
  const char* v = value_of(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::chrono::milliseconds timeout_from_environment() {
  // The declared upper bound (a week) keeps the conversion to milliseconds
  // from overflowing and catches a typo like 3e30; the lower bound keeps at
  // least one millisecond of waiting.
  return env_milliseconds(kTimeoutVariable);
}

}  // namespace tandem
