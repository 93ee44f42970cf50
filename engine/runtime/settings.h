// The runtime's settings. Each is declared once, in the engine's table
// (common/settings_table.h), with its Tandem name, the Horovod name it also
// honors, its default, its bounds and its description; docs/runtime.md lists
// the same settings (a unit test keeps them in step). Values are parsed
// strictly: a bad value is an InvalidArgument naming the variable and the
// value, never a silent default, by the engine's one strict reader
// (common/settings.h). An empty value means unset. The runtime's deadline
// is the engine's TANDEM_TIMEOUT; its log is the engine's (common/log.h:
// TANDEM_LOG, TANDEM_LOG_SUBSYS).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "common/settings_table.h"

namespace tandem::runtime {

// A runtime setting's declaration (name, Horovod name, type, default_text,
// bounds, doc) in the engine's one table.
using SettingSpec = tandem::SettingDecl;

// Every runtime setting, in documentation order.
const std::vector<SettingSpec>& runtime_setting_specs();

struct Settings {
  size_t fusion_threshold_bytes = declared_default_int("TANDEM_FUSION_THRESHOLD");
  double cycle_time_ms = declared_default_number("TANDEM_CYCLE_TIME");
  double idle_wait_ms = declared_default_number("TANDEM_IDLE_WAIT");
  bool wake_relay = declared_default_int("TANDEM_WAKE_RELAY") != 0;
  size_t cache_capacity = declared_default_int("TANDEM_CACHE_CAPACITY");
  std::string timeline_path;
  bool timeline_mark_cycles = declared_default_int("TANDEM_TIMELINE_MARK_CYCLES") != 0;
  double stall_check_seconds = declared_default_number("TANDEM_STALL_CHECK_TIME_SECONDS");
  double stall_shutdown_seconds = declared_default_number("TANDEM_STALL_SHUTDOWN_TIME_SECONDS");
  double deadlock_check_seconds =
      declared_default_number("TANDEM_DEADLOCK_CHECK_SECONDS");  // deadlock.h; 0: off
  bool batch_scheduling = false;                                 // TANDEM_RUNTIME_SCHEDULING=batch
  double straggler_report_seconds =
      declared_default_number("TANDEM_STRAGGLER_REPORT");  // straggler.h; 0: off
  // Autotune (autotune.h): whether it runs, its own settings, and which of
  // the knobs it tunes the user set (those it keeps).
  bool autotune = declared_default_int("TANDEM_AUTOTUNE") != 0;
  std::string autotune_log;
  int autotune_warmup_samples =
      static_cast<int>(declared_default_int("TANDEM_AUTOTUNE_WARMUP_SAMPLES"));
  int autotune_steps_per_sample =
      static_cast<int>(declared_default_int("TANDEM_AUTOTUNE_STEPS_PER_SAMPLE"));
  int autotune_max_samples =
      static_cast<int>(declared_default_int("TANDEM_AUTOTUNE_BAYES_OPT_MAX_SAMPLES"));
  double autotune_noise = declared_default_number("TANDEM_AUTOTUNE_GAUSSIAN_PROCESS_NOISE");
  bool fusion_threshold_set = false;
  bool cycle_time_set = false;
  bool cache_capacity_set = false;

  using Getenv = std::function<const char*(const char*)>;
  // Reads every declared variable through `getenv` (the process environment
  // by default). Throws InvalidArgument on a bad value, or when the Tandem
  // and Horovod names are both set to different values.
  static Settings from_environment(const Getenv& getenv = nullptr);
};

}  // namespace tandem::runtime
