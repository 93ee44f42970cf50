#include "runtime/settings.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <strings.h>

#include "common/errors.h"
#include "common/settings.h"

namespace tandem::runtime {

const std::vector<SettingSpec>& runtime_setting_specs() {
  static const std::vector<SettingSpec> specs = [] {
    std::vector<SettingSpec> v;
    for (const char* name :
         {"TANDEM_FUSION_THRESHOLD", "TANDEM_CYCLE_TIME", "TANDEM_IDLE_WAIT", "TANDEM_WAKE_RELAY",
          "TANDEM_CACHE_CAPACITY", "TANDEM_TIMELINE", "TANDEM_TIMELINE_MARK_CYCLES",
          "TANDEM_STALL_CHECK_TIME_SECONDS", "TANDEM_STALL_SHUTDOWN_TIME_SECONDS",
          "TANDEM_DEADLOCK_CHECK_SECONDS", "TANDEM_RUNTIME_SCHEDULING", "TANDEM_STRAGGLER_REPORT",
          "TANDEM_AUTOTUNE", "TANDEM_AUTOTUNE_LOG", "TANDEM_AUTOTUNE_WARMUP_SAMPLES",
          "TANDEM_AUTOTUNE_STEPS_PER_SAMPLE", "TANDEM_AUTOTUNE_BAYES_OPT_MAX_SAMPLES",
          "TANDEM_AUTOTUNE_GAUSSIAN_PROCESS_NOISE"})
      v.push_back(setting_declaration(name));
    return v;
  }();
  return specs;
}

namespace {

bool parse_scheduling(const char* var, const char* v) {
  if (strcasecmp(v, "other") == 0) return false;
  if (strcasecmp(v, "batch") == 0) return true;
  throw InvalidArgument(std::string(var) + "='" + v +
                        "': expected other or batch; fix or unset the variable");
}

int64_t int_in_bounds(const SettingSpec& spec, const char* var, const char* v) {
  return parse_int_setting(var, v, static_cast<int64_t>(spec.min), static_cast<int64_t>(spec.max));
}

double number_in_bounds(const SettingSpec& spec, const char* var, const char* v) {
  return parse_double_setting(var, v, spec.min, spec.max);
}

}  // namespace

Settings Settings::from_environment(const Getenv& getenv_fn) {
  Getenv get =
      getenv_fn ? getenv_fn : [](const char* n) -> const char* { return declared_getenv(n); };
  Settings s;
  // Returns the value and the variable it came from, or nullptr when unset.
  auto value = [&](const SettingSpec& spec, const char** var) -> const char* {
    // Empty means unset, as everywhere in the engine (common/settings.h).
    auto lookup = [&](const char* n) -> const char* {
      const char* v = n ? get(n) : nullptr;
      return (v && *v) ? v : nullptr;
    };
    const char* t = lookup(spec.name);
    const char* h = lookup(spec.horovod_name);
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
    // The strict parsers and the bounds are the engine's (common/settings.h,
    // common/settings_table.h).
    if (n == "TANDEM_FUSION_THRESHOLD") {
      s.fusion_threshold_bytes = static_cast<size_t>(int_in_bounds(spec, var, v));
      s.fusion_threshold_set = true;
    } else if (n == "TANDEM_CYCLE_TIME") {
      s.cycle_time_ms = number_in_bounds(spec, var, v);
      s.cycle_time_set = true;
    } else if (n == "TANDEM_IDLE_WAIT") s.idle_wait_ms = number_in_bounds(spec, var, v);
    else if (n == "TANDEM_WAKE_RELAY") s.wake_relay = parse_bool_setting(var, v);
    else if (n == "TANDEM_CACHE_CAPACITY") {
      s.cache_capacity = static_cast<size_t>(int_in_bounds(spec, var, v));
      s.cache_capacity_set = true;
    } else if (n == "TANDEM_TIMELINE") s.timeline_path = v;
    else if (n == "TANDEM_TIMELINE_MARK_CYCLES")
      s.timeline_mark_cycles = parse_bool_setting(var, v);
    else if (n == "TANDEM_STALL_CHECK_TIME_SECONDS")
      s.stall_check_seconds = number_in_bounds(spec, var, v);
    else if (n == "TANDEM_STALL_SHUTDOWN_TIME_SECONDS")
      s.stall_shutdown_seconds = number_in_bounds(spec, var, v);
    else if (n == "TANDEM_DEADLOCK_CHECK_SECONDS")
      s.deadlock_check_seconds = number_in_bounds(spec, var, v);
    else if (n == "TANDEM_RUNTIME_SCHEDULING") s.batch_scheduling = parse_scheduling(var, v);
    else if (n == "TANDEM_STRAGGLER_REPORT")
      s.straggler_report_seconds = number_in_bounds(spec, var, v);
    else if (n == "TANDEM_AUTOTUNE") s.autotune = parse_bool_setting(var, v);
    else if (n == "TANDEM_AUTOTUNE_LOG") s.autotune_log = v;
    else if (n == "TANDEM_AUTOTUNE_WARMUP_SAMPLES")
      s.autotune_warmup_samples = static_cast<int>(int_in_bounds(spec, var, v));
    else if (n == "TANDEM_AUTOTUNE_STEPS_PER_SAMPLE")
      s.autotune_steps_per_sample = static_cast<int>(int_in_bounds(spec, var, v));
    else if (n == "TANDEM_AUTOTUNE_BAYES_OPT_MAX_SAMPLES")
      s.autotune_max_samples = static_cast<int>(int_in_bounds(spec, var, v));
    else if (n == "TANDEM_AUTOTUNE_GAUSSIAN_PROCESS_NOISE")
      s.autotune_noise = number_in_bounds(spec, var, v);
    else throw Error("runtime: setting " + n + " is declared but not parsed (a bug)");
    if (std::strcmp(v, spec.default_text) != 0) note_setting(var, v, spec.default_text);
  }
  return s;
}

}  // namespace tandem::runtime
