#include "container_env.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>

#include "path_list.h"
#include "plugin_error.h"

namespace tandem::plugin {

namespace {

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? std::string("/") : path.substr(0, slash);
}

bool inside(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

}  // namespace

std::string preload_path(const Config& config) {
  return dir_of(config.engine_path) + "/libtandem-preload.so";
}

std::string engine_dir(const Config& config) { return dir_of(config.engine_path); }

uint16_t store_port(uint32_t job_id, uint32_t step_id) {
  return static_cast<uint16_t>(kStorePortBase + (job_id % 256) * 16 + step_id % 16);
}

std::string random_token() {
  unsigned char b[16];
  size_t got = 0;
  while (got < sizeof(b)) {
    const ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw PluginError("getrandom for the rendezvous token failed");
    got += static_cast<size_t>(n);
  }
  char hex[33];
  for (size_t i = 0; i < sizeof(b); ++i) std::snprintf(hex + 2 * i, 3, "%02x", b[i]);
  return hex;
}

std::string append_bind(const std::string& list, const std::string& entry) {
  size_t start = 0;
  while (start <= list.size()) {
    const size_t end = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, end - start);
    if (item == entry || item.rfind(entry + ":", 0) == 0) return list;
    start = end + 1;
  }
  return list.empty() ? entry : list + "," + entry;
}

void export_container_env(const Config& config, const TaskIdentity& id,
                          const std::string& master_addr, uint32_t job_id, uint32_t step_id,
                          TaskEnv& env) {
  std::string binds = engine_dir(config);
  if (!config.python_path.empty()) {
    env.set("TANDEM_PYTHONPATH", config.python_path);
    if (!inside(config.python_path, binds)) binds += "," + config.python_path;
  }
  for (const char* var : {"APPTAINER_BIND", "SINGULARITY_BIND"}) {
    std::string list = env.get(var).value_or("");
    size_t start = 0;
    while (start <= binds.size()) {
      const size_t end = std::min(binds.find(',', start), binds.size());
      list = append_bind(list, binds.substr(start, end - start));
      start = end + 1;
    }
    env.set(var, list);
  }
  if (env.get("TANDEM_RENDEZVOUS_TOKEN").value_or("").empty()) return;
  const bool v6 = master_addr.find(':') != std::string::npos;
  env.set("TANDEM_RENDEZVOUS_ADDR", (v6 ? "[" + master_addr + "]" : master_addr) + ":" +
                                        std::to_string(store_port(job_id, step_id)));
  env.set("TANDEM_RANK", std::to_string(id.rank));
  env.set("TANDEM_SIZE", std::to_string(id.size));
}

}  // namespace tandem::plugin
