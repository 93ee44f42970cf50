// The value of --horovod: off, on, on with one report line per task, or
// elastic (docs/elastic.md: the step survives failed tasks and nodes; ranks
// bootstrap over TCP through a membership service in srun).
#pragma once

#include <optional>
#include <string_view>

namespace tandem::plugin {

enum class Mode { kOff, kOn, kVerbose, kElastic };

// "on", "off", "verbose", "elastic"; the bare option (no value) means "on".
// Returns nothing for any other spelling (case matters, as in Slurm's own
// options).
std::optional<Mode> parse_mode(std::string_view text);

const char* mode_name(Mode mode);

// For error messages: the values parse_mode accepts.
inline constexpr const char* kModeValues = "on, off, verbose, elastic";

inline bool mode_enabled(Mode mode) { return mode != Mode::kOff; }
inline bool mode_elastic(Mode mode) { return mode == Mode::kElastic; }

}  // namespace tandem::plugin
