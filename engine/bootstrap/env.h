// The bootstrap's reading of its environment variables, through the engine's
// one reader (common/settings.h): each variable is declared once in
// common/settings_table.h and listed in docs/bootstrap.md; a value that does
// not parse is a BootstrapError naming the variable and the value, never a
// silent default.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace tandem {
namespace env {

// The raw value of a declared setting or a listed launcher fact
// (kEnvironmentFacts), or nullopt when unset. An empty value counts as unset.
std::optional<std::string> get(const char* name);

// A declared integer within its declared bounds; nullopt when unset.
std::optional<int> get_int(const char* name);

}  // namespace env

// TANDEM_BOOTSTRAP_TIMEOUT: the deadline of every bootstrap wait done on the
// user's behalf (joining, the identity exchange).
std::chrono::milliseconds bootstrap_timeout();

}  // namespace tandem
