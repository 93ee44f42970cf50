#include "srun_args.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>

namespace tandem::plugin {
namespace {

// Short options of srun 22.05 that take a required argument (srun --help).
constexpr std::string_view kShortWithArg = "AbcdDeiJLMmnNopqrSTtWwxCGB";

// Long options of srun 22.05 that take a required argument, so that
// "--nodes 3" is read as one option and its value.
constexpr const char* kLongWithArg[] = {
    "account",
    "acctg-freq",
    "bb",
    "bbf",
    "bcast",
    "bcast-exclude",
    "begin",
    "chdir",
    "cluster-constraint",
    "clusters",
    "comment",
    "constraint",
    "container",
    "core-spec",
    "cores-per-socket",
    "cpu-bind",
    "cpu-freq",
    "cpus-per-gpu",
    "cpus-per-task",
    "deadline",
    "delay-boot",
    "dependency",
    "distribution",
    "epilog",
    "error",
    "exclude",
    "export",
    "extra-node-info",
    "gid",
    "gpu-bind",
    "gpu-freq",
    "gpus",
    "gpus-per-node",
    "gpus-per-socket",
    "gpus-per-task",
    "gres",
    "gres-flags",
    "het-group",
    "input",
    "job-name",
    "jobid",
    "licenses",
    "mail-type",
    "mail-user",
    "mcs-label",
    "mem",
    "mem-bind",
    "mem-per-cpu",
    "mem-per-gpu",
    "mincpus",
    "mpi",
    "network",
    "nodefile",
    "nodelist",
    "nodes",
    "ntasks",
    "ntasks-per-core",
    "ntasks-per-gpu",
    "ntasks-per-node",
    "ntasks-per-socket",
    "open-mode",
    "output",
    "partition",
    "power",
    "priority",
    "profile",
    "prolog",
    "qos",
    "relative",
    "reservation",
    "signal",
    "slurmd-debug",
    "sockets-per-node",
    "switches",
    "task-epilog",
    "task-prolog",
    "thread-spec",
    "threads",
    "threads-per-core",
    "time",
    "time-min",
    "tmp",
    "uid",
    "wait",
    "wckey",
};

bool long_takes_arg(std::string_view name) {
  for (const char* n : kLongWithArg) {
    if (name == n) return true;
  }
  return false;
}

}  // namespace

SrunArgs scan_srun_args(const std::vector<std::string>& argv) {
  SrunArgs out;
  for (size_t i = 1; i < argv.size(); ++i) {
    std::string_view a = argv[i];
    if (a == "--" || a.size() < 2 || a[0] != '-') break;  // the command starts here
    if (a[1] == '-') {
      std::string_view body = a.substr(2);
      const size_t eq = body.find('=');
      std::string_view name = body.substr(0, eq);
      std::optional<std::string> value;
      if (eq != std::string_view::npos) {
        value = std::string(body.substr(eq + 1));
      } else if (long_takes_arg(name) && i + 1 < argv.size()) {
        value = argv[++i];
      }
      // getopt_long accepts unambiguous prefixes; srun's own --mpi and ours
      // are written in full in practice, and a prefix only risks a miss.
      if (name == "horovod") out.horovod = value ? *value : "on";
      if (name == "mpi" && value) out.mpi = *value;
      if (name == "kill-on-bad-exit") out.kill_on_bad_exit = value ? *value : "1";
      continue;
    }
    // A cluster of short options: "-lN2" or "-N" "2". The first one that
    // takes an argument consumes the rest of the word or the next word.
    // -K's argument is optional and so only ever the rest of the word.
    for (size_t j = 1; j < a.size(); ++j) {
      if (a[j] == 'K') {
        out.kill_on_bad_exit = j + 1 < a.size() ? std::string(a.substr(j + 1)) : "1";
        break;
      }
      if (kShortWithArg.find(a[j]) != std::string_view::npos) {
        if (j + 1 == a.size()) ++i;
        break;
      }
    }
  }
  return out;
}

bool needs_kill_on_bad_exit(bool enabled, const SrunArgs& args, const char* env) {
  return enabled && !args.kill_on_bad_exit && env == nullptr;
}

std::vector<std::string> own_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  size_t start = 0;
  while (start < all.size()) {
    size_t end = all.find('\0', start);
    if (end == std::string::npos) end = all.size();
    argv.emplace_back(all.substr(start, end - start));
    start = end + 1;
  }
  return argv;
}

}  // namespace tandem::plugin
