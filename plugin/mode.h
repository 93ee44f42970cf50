// The value of --horovod: off, on, or on with one report line per task.
#pragma once

#include <optional>
#include <string_view>

namespace tandem::plugin {

enum class Mode { kOff, kOn, kVerbose };

// "on", "off", "verbose"; the bare option (no value) means "on".
// Returns nothing for any other spelling (case matters, as in Slurm's own
// options).
std::optional<Mode> parse_mode(std::string_view text);

const char* mode_name(Mode mode);

// For error messages: the values parse_mode accepts.
inline constexpr const char* kModeValues = "on, off, verbose";

inline bool mode_enabled(Mode mode) { return mode != Mode::kOff; }

}  // namespace tandem::plugin
