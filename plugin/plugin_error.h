// The one exception type inside the plugin. Its message is shown to the user
// as is (prefixed with "tandem: "), so it says what was expected, what was
// found and what to do. Nothing throws past the slurm_spank_* functions.
#pragma once

#include <stdexcept>

namespace tandem::plugin {

class PluginError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace tandem::plugin
