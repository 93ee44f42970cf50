#include "mode.h"

namespace tandem::plugin {

std::optional<Mode> parse_mode(std::string_view text) {
  if (text == "on") return Mode::kOn;
  if (text == "off") return Mode::kOff;
  if (text == "verbose") return Mode::kVerbose;
  if (text == "elastic") return Mode::kElastic;
  return std::nullopt;
}

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::kOff: return "off";
    case Mode::kOn: return "on";
    case Mode::kVerbose: return "verbose";
    case Mode::kElastic: return "elastic";
  }
  return "?";
}

}  // namespace tandem::plugin
