#include "plugin_state.h"

namespace tandem::plugin {

PluginState& plugin_state() {
  static PluginState state;
  return state;
}

}  // namespace tandem::plugin
