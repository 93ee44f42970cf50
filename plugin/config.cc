#include "config.h"

#include <functional>

#include "errors.h"
#include "plugin_error.h"
#include "tandem_config.h"

namespace tandem::plugin {
namespace {

using Setter = std::function<void(Config&, const std::string&)>;

struct Key {
  const char* name;
  const char* help;
  Setter set;
};

Setter path_setter(std::string Config::*field, bool may_be_empty) {
  return [field, may_be_empty](Config& c, const std::string& v) {
    if (!may_be_empty && v.empty()) throw PluginError("expected a path, found an empty value");
    if (!v.empty() && v.front() != '/') {
      throw PluginError("expected an absolute path, found '" + v + "'");
    }
    c.*field = v;
  };
}

Setter one_of_setter(std::string Config::*field, std::vector<std::string> allowed) {
  return [field, allowed](Config& c, const std::string& v) {
    for (const auto& a : allowed) {
      if (v == a) {
        c.*field = v;
        return;
      }
    }
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw PluginError("expected one of " + list + ", found '" + v + "'");
  };
}

// A binding option; the planner parses the value (one spelling of values).
Setter policy_setter(const char* key) {
  return [key](Config& c, const std::string& v) {
    try {
      tandem::planner::parse_policy_value(c.policy, key, v);
    } catch (const tandem::planner::PlanError& e) { throw PluginError(e.what()); }
  };
}

// The table. Add a key here and a field in Config.
const std::vector<Key>& keys() {
  static const std::vector<Key> table = {
      {"engine", "path of libtandem.so.0; the preload libtandem-preload.so is beside it",
       path_setter(&Config::engine_path, false)},
      {"python", "folder of the tandem python package (empty: leave PYTHONPATH alone)",
       path_setter(&Config::python_path, true)},
      {"default", "mode without --horovod: off, on, verbose",
       [](Config& c, const std::string& v) {
         auto m = parse_mode(v);
         if (!m)
           throw PluginError(std::string("expected one of ") + kModeValues + ", found '" + v + "'");
         c.default_mode = *m;
       }},
      {"topology", "hwloc XML file instead of the node's topology",
       path_setter(&Config::topology_xml, true)},
      {"binding", "binding policy: auto, none", one_of_setter(&Config::binding, {"auto", "none"})},
      {"visible", "GPUs each task sees: all (own one at index local_rank), own",
       policy_setter("visible")},
      {"membind", "bind memory to the task's NUMA node: on, off", policy_setter("membind")},
      {"nics", "NICs binding may choose: NAME[,NAME...] or any", policy_setter("nics")},
  };
  return table;
}

}  // namespace

Config default_config() {
  Config c;
  c.engine_path = TANDEM_DEFAULT_ENGINE_PATH;
  c.python_path = TANDEM_DEFAULT_PYTHON_PATH;
  return c;
}

std::string config_keys() {
  std::string list;
  for (const auto& k : keys()) list += (list.empty() ? "" : ", ") + std::string(k.name);
  return list;
}

Config parse_config(const std::vector<std::string>& args) {
  Config c = default_config();
  for (const auto& arg : args) {
    const auto eq = arg.find('=');
    if (eq == std::string::npos) {
      throw PluginError("plugstack.conf argument '" + arg +
                        "' is not key=value (keys: " + config_keys() + ")");
    }
    const std::string name = arg.substr(0, eq);
    const std::string value = arg.substr(eq + 1);
    const Key* key = nullptr;
    for (const auto& k : keys()) {
      if (name == k.name) key = &k;
    }
    if (!key) {
      throw PluginError("plugstack.conf: unknown key '" + name + "' in '" + arg +
                        "' (known keys: " + config_keys() + ")");
    }
    try {
      key->set(c, value);
    } catch (const PluginError& e) {
      throw PluginError("plugstack.conf: bad value for '" + name + "' (" + key->help +
                        "): " + e.what());
    }
  }
  return c;
}

}  // namespace tandem::plugin
