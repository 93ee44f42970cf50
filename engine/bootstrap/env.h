// Strict reading of the bootstrap's environment variables. Every variable the
// bootstrap reads is declared once in env.cc (name, default, meaning) and
// listed in docs/bootstrap.md; a value that does not parse is a
// BootstrapError naming the variable and the value, never a silent default.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace tandem {
namespace env {

// The raw value, or nullopt when unset. An empty value counts as unset.
std::optional<std::string> get(const char* name);

// A decimal integer in [min, max]; nullopt when unset.
std::optional<int> get_int(const char* name, int min, int max);

// A duration in seconds (decimal, fraction allowed, > 0, at most a day);
// fallback when unset.
std::chrono::milliseconds get_seconds(const char* name, std::chrono::milliseconds fallback);

}  // namespace env

// TANDEM_BOOTSTRAP_TIMEOUT (seconds, default 60): the deadline of every
// bootstrap wait done on the user's behalf (joining, the identity exchange).
std::chrono::milliseconds bootstrap_timeout();

}  // namespace tandem
