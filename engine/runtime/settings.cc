#include "runtime/settings.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <strings.h>

#include "common/errors.h"

namespace tandem::runtime {

const std::vector<SettingSpec>& runtime_setting_specs() {
  static const std::vector<SettingSpec> specs = {
      {"TANDEM_FUSION_THRESHOLD", "HOROVOD_FUSION_THRESHOLD", "134217728",
       "Bytes: the largest fused allreduce buffer. Ready allreduces of the same dtype, op and "
       "scale are packed up to this size; 0 turns fusion off."},
      {"TANDEM_CYCLE_TIME", "HOROVOD_CYCLE_TIME", "0.5",
       "Milliseconds: the batching window. When work arrives on an idle engine the cycle "
       "starts this long after it, so that tensors enqueued back to back share a cycle. No "
       "sleep happens while nothing is queued."},
      {"TANDEM_IDLE_WAIT", nullptr, "1.0",
       "Milliseconds an idle rank waits for work before running an empty negotiation round, "
       "so that peers that have work are not held up. Bounds the extra latency when ranks "
       "enqueue at different times."},
      {"TANDEM_CACHE_CAPACITY", "HOROVOD_CACHE_CAPACITY", "1024",
       "Entries of the response cache per process set; 0 turns it off (every tensor is "
       "negotiated in full every step)."},
      {"TANDEM_TIMELINE", "HOROVOD_TIMELINE", "(unset)",
       "Path of a Chrome-trace JSON timeline written by rank 0 from init on."},
      {"TANDEM_TIMELINE_MARK_CYCLES", "HOROVOD_TIMELINE_MARK_CYCLES", "0",
       "1 to mark every cycle in the timeline."},
      {"TANDEM_STALL_CHECK_TIME_SECONDS", "HOROVOD_STALL_CHECK_TIME_SECONDS", "60",
       "Seconds after which rank 0 warns about a tensor that some ranks enqueued and others "
       "did not, naming both; 0 turns the check off."},
      {"TANDEM_STALL_SHUTDOWN_TIME_SECONDS", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "0",
       "Seconds after which such a stall fails every pending operation on every rank "
       "(TANDEM_ERR_TIMEOUT); 0 waits forever."},
      {"TANDEM_LOG_LEVEL", "HOROVOD_LOG_LEVEL", "warning",
       "trace, debug, info, warning, error or fatal: the runtime's messages on stderr."},
  };
  return specs;
}

namespace {

[[noreturn]] void bad(const char* var, const char* value, const char* expected) {
  throw InvalidArgument(std::string(var) + "='" + value + "': expected " + expected +
                        "; fix or unset the variable");
}

size_t parse_size(const char* var, const char* v) {
  if (*v == '\0' || std::strspn(v, "0123456789") != std::strlen(v))
    bad(var, v, "a non-negative integer");
  errno = 0;
  unsigned long long x = std::strtoull(v, nullptr, 10);
  if (errno == ERANGE) bad(var, v, "a non-negative integer that fits in 64 bits");
  return static_cast<size_t>(x);
}

double parse_number(const char* var, const char* v) {
  char* end = nullptr;
  errno = 0;
  double x = std::strtod(v, &end);
  if (*v == '\0' || *end != '\0' || errno == ERANGE || !std::isfinite(x) || x < 0)
    bad(var, v, "a non-negative number");
  return x;
}

bool parse_bool(const char* var, const char* v) {
  for (const char* t : {"1", "true", "yes", "on"})
    if (strcasecmp(v, t) == 0) return true;
  for (const char* f : {"0", "false", "no", "off"})
    if (strcasecmp(v, f) == 0) return false;
  bad(var, v, "1/0, true/false, yes/no or on/off");
}

LogLevel parse_level(const char* var, const char* v) {
  static const char* const names[] = {"trace", "debug", "info", "warning", "error", "fatal"};
  for (int i = 0; i < 6; ++i)
    if (strcasecmp(v, names[i]) == 0) return static_cast<LogLevel>(i);
  if (strcasecmp(v, "warn") == 0) return LogLevel::kWarning;
  bad(var, v, "one of trace, debug, info, warning, error, fatal");
}

}  // namespace

Settings Settings::from_environment(const Getenv& getenv_fn) {
  Getenv get = getenv_fn ? getenv_fn : [](const char* n) -> const char* { return std::getenv(n); };
  Settings s;
  // Returns the value and the variable it came from, or nullptr when unset.
  auto value = [&](const SettingSpec& spec, const char** var) -> const char* {
    const char* t = get(spec.name);
    const char* h = spec.horovod_name ? get(spec.horovod_name) : nullptr;
    if (t && h && std::strcmp(t, h) != 0)
      throw InvalidArgument(std::string(spec.name) + "='" + t + "' and " + spec.horovod_name +
                            "='" + h + "' disagree; set only one of them");
    *var = t ? spec.name : spec.horovod_name;
    return t ? t : h;
  };
  for (const SettingSpec& spec : runtime_setting_specs()) {
    const char* var = nullptr;
    const char* v = value(spec, &var);
    if (!v) continue;
    std::string n = spec.name;
    if (n == "TANDEM_FUSION_THRESHOLD") s.fusion_threshold_bytes = parse_size(var, v);
    else if (n == "TANDEM_CYCLE_TIME") s.cycle_time_ms = parse_number(var, v);
    else if (n == "TANDEM_IDLE_WAIT") s.idle_wait_ms = parse_number(var, v);
    else if (n == "TANDEM_CACHE_CAPACITY") s.cache_capacity = parse_size(var, v);
    else if (n == "TANDEM_TIMELINE") s.timeline_path = v;
    else if (n == "TANDEM_TIMELINE_MARK_CYCLES") s.timeline_mark_cycles = parse_bool(var, v);
    else if (n == "TANDEM_STALL_CHECK_TIME_SECONDS") s.stall_check_seconds = parse_number(var, v);
    else if (n == "TANDEM_STALL_SHUTDOWN_TIME_SECONDS")
      s.stall_shutdown_seconds = parse_number(var, v);
    else if (n == "TANDEM_LOG_LEVEL") s.log_level = parse_level(var, v);
    else throw Error("runtime: setting " + n + " is declared but not parsed (a bug)");
  }
  if (s.cache_capacity > (1u << 20))
    throw InvalidArgument("TANDEM_CACHE_CAPACITY=" + std::to_string(s.cache_capacity) +
                          ": expected at most 1048576 entries");
  return s;
}

}  // namespace tandem::runtime
