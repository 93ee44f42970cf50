// Site configuration from the plugin's plugstack.conf arguments:
//
//   required /usr/lib/x86_64-linux-gnu/slurm-wlm/tandem_spank.so engine=... default=off
//
// Every key has a default, set before the arguments are read. Each argument is
// key=value; an unknown key, a missing '=' or a bad value is a PluginError
// naming the argument. Keys live in one table (config.cc) so that new ones
// (binding policies, NIC filters, ...) are one line plus a field here.
#pragma once

#include <string>
#include <vector>

#include "mode.h"
#include "policy.h"

namespace tandem::plugin {

struct Config {
  // libtandem.so.0 (TANDEM_LIBRARY in every task of an enabled step); the
  // preload shim beside it goes on LD_PRELOAD (container_env.h).
  std::string engine_path;
  // Folder holding the `tandem` python package, prepended to PYTHONPATH;
  // empty: PYTHONPATH is left alone.
  std::string python_path;
  // The mode of a step whose user gave no --horovod.
  Mode default_mode = Mode::kOff;
  // hwloc XML used instead of the live topology (tests, dry runs); empty:
  // the node's own topology.
  std::string topology_xml;
  // How tasks are bound (see task_binding.h): "auto" (the planner's
  // "closest" policy) or "none".
  std::string binding = "auto";
  // The planner's options (docs/binding.md): visible, membind, nics. Its
  // kind follows `binding`.
  tandem::planner::Policy policy;
};

// Defaults: engine and python paths from the build configuration.
Config default_config();

// Parses plugstack arguments over default_config(). Throws PluginError.
Config parse_config(const std::vector<std::string>& args);

// The keys parse_config accepts, comma separated (for messages and docs).
std::string config_keys();

}  // namespace tandem::plugin
