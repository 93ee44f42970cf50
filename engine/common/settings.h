// Environment settings: every TANDEM_*/HOROVOD_* variable is read through
// these helpers, declared once next to the code that uses it (or here when
// several layers share it), and parsed strictly: a value that is set but
// malformed or out of range is an InvalidArgument that names the variable,
// the value and what was expected, never a silent fallback to the default.
// An unset or empty variable means "use the default".
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tandem {

// Integer in [min, max]; decimal only, no trailing characters.
int64_t env_int(const char* name, int64_t fallback, int64_t min, int64_t max);

// Finite number in [min, max] (e.g. "0.5", "300").
double env_double(const char* name, double fallback, double min, double max);

// Raw string (no parsing); fallback when unset or empty.
std::string env_string(const char* name, const std::string& fallback);

// The parsers behind env_int and env_double, for callers that look their
// variables up elsewhere (a table of Horovod aliases, a map in a test).
// `name` is only used in the message; `value` must be non-null and non-empty.
int64_t parse_int_setting(const char* name, const char* value, int64_t min, int64_t max);
double parse_double_setting(const char* name, const char* value, double min, double max);
// 1/0, true/false, yes/no, on/off (any case).
bool parse_bool_setting(const char* name, const char* value);

// The settings this process runs with that differ from their defaults, for
// the "settings" line tandem_init logs at info. The readers above note a
// variable when it is set to something else than the fallback they were
// given; readers with their own tables (the runtime's, the bootstrap's, the
// GPU path's) call note_setting themselves. Noted once per name, in the
// order first read; thread-safe. Identity and secrets (TANDEM_RANK,
// TANDEM_RENDEZVOUS_TOKEN) are not settings and are never noted.
void note_setting(const std::string& name, const std::string& value,
                  const std::string& default_text);
// "TANDEM_SHM_CMA=0 (default 1)", ...
std::vector<std::string> settings_differing_from_defaults();

// TANDEM_TIMEOUT: seconds (fractions allowed, > 0) that any wait on a peer may
// last without progress before it fails with TimeoutError. Default 300 s: long
// enough for a slow rank to finish a training step, short enough that a hung
// job is noticed. Shared by the bootstrap, the transports and the runtime.
constexpr const char* kTimeoutVariable = "TANDEM_TIMEOUT";
constexpr double kDefaultTimeoutSeconds = 300.0;
std::chrono::milliseconds timeout_from_environment();

}  // namespace tandem
