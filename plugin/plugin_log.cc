#include "plugin_log.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "plugin_error.h"
#include "plugin_state.h"
#include "spank_api.h"

namespace tandem::plugin {
namespace {

void write_line(const std::string& text) {
  std::string line = text + "\n";
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {  // one write per line: tasks' lines do not interleave
    const ssize_t n = ::write(2, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

// srun, sbatch, salloc and slurmstepd: through Slurm, which shows errors and
// info where its own messages go.
void slurm_sink(const log::Record& r) {
  const std::string message(r.message);
  if (r.level == log::Level::kError) {
    slurm_error("%s: %s", kPluginName, message.c_str());
  } else {
    const std::string line = log::format(r);
    slurm_info("%s", line.c_str());
  }
}

// In a task: its stderr (srun forwards it), errors as "tandem: <message>".
void task_sink(const log::Record& r) {
  if (r.level == log::Level::kError)
    write_line(std::string(kPluginName) + ": " + std::string(r.message));
  else write_line(log::format(r));
}

class ProcessEnv : public TaskEnv {
 public:
  std::optional<std::string> get(const std::string& name) const override {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  }
  void set(const std::string&, const std::string&) override {}
};

}  // namespace

void install_log() {
  static bool installed = false;  // hooks run on one thread per process
  if (installed) return;
  installed = true;
  log::set_program(kPluginName);
  log::configure(log::Config{});
  log::set_sink(slurm_sink);
}

void configure_log(const TaskEnv& env, bool strict) {
  install_log();
  try {
    log::configure(log_config_from(env));
  } catch (const PluginError&) {
    if (strict) throw;
  }
}

void configure_log_from_process_environment(bool strict) { configure_log(ProcessEnv(), strict); }

void log_to_task(int rank, const std::string& node) {
  log::set_identity(rank, node);
  log::set_sink(task_sink);
}

void task_stderr_line(const std::string& line) { write_line(line); }

}  // namespace tandem::plugin
