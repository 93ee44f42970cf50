// The runtime's settings. Each is declared once, in the table in
// settings.cc, with its Tandem name, the Horovod name it also honors, its
// default and its description; docs/runtime.md lists the same table (a unit
// test keeps them in step). Values are parsed strictly: a bad value is an
// InvalidArgument naming the variable and the value, never a silent default,
// by the engine's one strict reader (common/settings.h). An empty value means
// unset. The runtime's deadline is the engine's TANDEM_TIMEOUT; its log is
// the engine's (common/log.h: TANDEM_LOG, TANDEM_LOG_SUBSYS).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace tandem::runtime {

struct SettingSpec {
  const char* name;          // TANDEM_*
  const char* horovod_name;  // HOROVOD_* or nullptr
  const char* default_text;  // as documented
  const char* description;
};

// Every runtime setting, in documentation order.
const std::vector<SettingSpec>& runtime_setting_specs();

struct Settings {
  size_t fusion_threshold_bytes = 128u << 20;
  double cycle_time_ms = 0.5;
  double idle_wait_ms = 1.0;
  bool wake_relay = true;
  size_t cache_capacity = 1024;
  std::string timeline_path;
  bool timeline_mark_cycles = false;
  double stall_check_seconds = 60;
  double stall_shutdown_seconds = 0;
  double deadlock_check_seconds = 1;  // deadlock.h; 0: off
  bool batch_scheduling = false;      // TANDEM_RUNTIME_SCHEDULING=batch

  using Getenv = std::function<const char*(const char*)>;
  // Reads every declared variable through `getenv` (the process environment
  // by default). Throws InvalidArgument on a bad value, or when the Tandem
  // and Horovod names are both set to different values.
  static Settings from_environment(const Getenv& getenv = nullptr);
};

}  // namespace tandem::runtime
