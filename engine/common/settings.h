// Environment settings: every TANDEM_*/HOROVOD_* variable is declared once in
// common/settings_table.h, read through these helpers, and parsed strictly: a
// value that is set but malformed or out of range is an InvalidArgument that
// names the variable, the value and what was expected, never a silent
// fallback to the default. An unset or empty variable means "use the
// default".
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/settings_table.h"

namespace tandem {

// The readers. Each reads a variable declared in common/settings_table.h,
// with that declaration's default and bounds; asking for an undeclared name,
// or reading one as a type it is not declared with, throws Error (a bug,
// caught by tests/unit/common/settings_test.cc).
const SettingDecl& setting_declaration(const char* name);

// kInt or kBytes: integer in [min, max]; decimal only, no trailing
// characters. The default when unset; nullopt from env_int_if_set when the
// declaration has no default and the variable is unset.
int64_t env_int(const char* name);
std::optional<int64_t> env_int_if_set(const char* name);

// kNumber or kSeconds: finite number in [min, max] (e.g. "0.5", "300").
double env_double(const char* name);

// kSeconds, in milliseconds (rounded to the nearest).
std::chrono::milliseconds env_milliseconds(const char* name);

// kBool: 1/0, true/false, yes/no, on/off (any case).
bool env_bool(const char* name);

// kString or kEnum: the raw string; the default when unset. An enum is
// checked against its choices by its caller, which has the values' meaning.
std::string env_string(const char* name);

// Any declared setting: the raw value, nullopt when unset or empty, never
// noted among the settings that differ from their defaults (identity and
// secrets, and variables whose presence is what matters).
std::optional<std::string> env_value(const char* name);

// getenv() for a declared setting (its Tandem or Horovod name), for readers
// that take a lookup function so that tests can pass a map: the process's
// value, nullptr when unset (empty is returned as it is).
const char* declared_getenv(const char* name);

// A variable of kEnvironmentFacts (a launcher's fact, not a setting): the raw
// value, nullopt when unset or empty.
std::optional<std::string> environment_fact(const char* name);

// The parsers behind the readers, for callers that look their declared
// variables up elsewhere (a table of Horovod aliases, a map in a test).
// `name` is only used in the message; `value` must be non-null and non-empty.
int64_t parse_int_setting(const char* name, const char* value, int64_t min, int64_t max);
double parse_double_setting(const char* name, const char* value, double min, double max);
// 1/0, true/false, yes/no, on/off (any case).
bool parse_bool_setting(const char* name, const char* value);

// The settings this process runs with that differ from their defaults, for
// the "settings" line tandem_init logs at info. The readers above note a
// variable when it is set to something else than its declared default;
// readers with their own lookups (the runtime's, the bootstrap's, the GPU
// path's) call note_setting themselves. Noted once per name, in the order
// first read; thread-safe. Identity and secrets (TANDEM_RANK,
// TANDEM_RENDEZVOUS_TOKEN) are not settings and are never noted.
void note_setting(const std::string& name, const std::string& value,
                  const std::string& default_text);
// "TANDEM_SHM_CMA=0 (default 1)", ...
std::vector<std::string> settings_differing_from_defaults();

// TANDEM_TIMEOUT: seconds (fractions allowed, > 0) that any wait on a peer may
// last without progress before it fails with TimeoutError. Its default (in
// the table) is long enough for a slow rank to finish a training step, short
// enough that a hung job is noticed. Shared by the bootstrap, the transports
// and the runtime.
constexpr const char* kTimeoutVariable = "TANDEM_TIMEOUT";
std::chrono::milliseconds timeout_from_environment();

}  // namespace tandem
