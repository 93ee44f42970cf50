// tandem-bind: prints the binding plan the plugin would apply, for a topology
// (an hwloc XML file, or this machine) and a task layout. Same planner code
// as the plugin (plugin/planner).
//
//   tandem-bind --topology FILE.xml --tasks N [--gpus LIST] [--cpus LIST]
//               [--gpus-per-task K] [--policy closest|none] [--visible all|own]
//               [--membind on|off] [--nics NAMES|any] [--json]
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tool_log.h"
#include "errors.h"
#include "format.h"
#include "hwloc_loader.h"
#include "planner.h"

namespace tp = tandem::planner;

namespace {

constexpr const char* kUsage =
    "usage: tandem-bind [--topology FILE.xml] [--tasks N] [--gpus LIST|none] [--cpus LIST]\n"
    "                   [--gpus-per-task K] [--policy closest|none] [--visible all|own]\n"
    "                   [--membind on|off] [--nics NAME[,NAME...]|any] [--json]\n"
    "Prints the GPU(s), CPUs, NUMA domain, NIC and environment each local task would get.\n"
    "  --topology  hwloc XML (lstopo --of xml); default: this machine\n"
    "  --tasks     local task count (default 1)\n"
    "  --gpus      Slurm GPU indices of the step, e.g. 0,1,4-5 (default: every NVIDIA GPU)\n"
    "  --cpus      CPUs the step may use, e.g. 0-15 (default: all allowed)\n"
    "  --gpus-per-task  as srun's: task t is given GPUs t*K..t*K+K-1 of --gpus (a user binding)\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int parse_count(std::string_view flag, std::string_view text, int min) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < min ||
      value > 4096) {
    throw UsageError(std::string(flag) + ": expected a whole number from " + std::to_string(min) +
                     " to 4096, got '" + std::string(text) + "'");
  }
  return value;
}

struct Options {
  std::string topology;
  bool json = false;
  int gpus_per_task = 0;
  tp::PlanRequest request;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (flag == "--json") {
      o.json = true;
      continue;
    }
    if (i + 1 >= argc)
      throw UsageError("unknown option or missing value: '" + std::string(flag) + "'");
    std::string_view value = argv[++i];
    if (flag == "--topology") o.topology = value;
    else if (flag == "--tasks") o.request.local_tasks = parse_count(flag, value, 1);
    else if (flag == "--gpus-per-task") o.gpus_per_task = parse_count(flag, value, 1);
    else if (flag == "--cpus") o.request.step_cpus = tp::CpuSet::parse(value, "--cpus");
    else if (flag == "--gpus") {
      o.request.step_gpus =
          value == "none" ? std::vector<int>{} : tp::CpuSet::parse(value, "--gpus").cpus();
    } else if (flag == "--policy" || flag == "--visible" || flag == "--membind" ||
               flag == "--nics") {
      tp::parse_policy_value(o.request.policy, flag.substr(2), value);
    } else {
      throw UsageError("unknown option '" + std::string(flag) + "'");
    }
  }
  return o;
}

// --gpus-per-task K: Slurm binds task t to the t-th block of K GPUs.
void apply_gpus_per_task(Options& o, const tp::Topology& topology) {
  if (o.gpus_per_task == 0) return;
  std::vector<int> step = o.request.step_gpus.value_or(std::vector<int>{});
  if (!o.request.step_gpus)
    for (size_t i = 0; i < topology.gpus.size(); ++i) step.push_back(static_cast<int>(i));
  size_t needed = static_cast<size_t>(o.gpus_per_task) * static_cast<size_t>(o.request.local_tasks);
  if (step.size() < needed) {
    throw UsageError("--gpus-per-task " + std::to_string(o.gpus_per_task) + " with --tasks " +
                     std::to_string(o.request.local_tasks) + " needs " + std::to_string(needed) +
                     " GPUs, but only " + std::to_string(step.size()) + " are given");
  }
  o.request.user.gpus = true;
  o.request.task_gpus.resize(o.request.local_tasks);
  for (int t = 0; t < o.request.local_tasks; ++t) {
    for (int g = 0; g < o.gpus_per_task; ++g)
      o.request.task_gpus[t].push_back(step[t * o.gpus_per_task + g]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (!tandem::tools::start_log("tandem-bind")) return 2;
  try {
    Options o = parse(argc, argv);
    tp::LoadedTopology topology =
        o.topology.empty() ? tp::LoadedTopology::live() : tp::LoadedTopology::from_xml(o.topology);
    apply_gpus_per_task(o, topology.model());
    tp::NodePlan plan = tp::plan_node(topology.model(), o.request);
    std::string out =
        o.json ? tp::to_json(plan, o.request.policy) : tp::to_text(plan, o.request.policy);
    std::fputs(out.c_str(), stdout);
    return 0;
  } catch (const UsageError& e) {
    TANDEM_ERROR(tools, "%s", e.what());
    std::fputs(kUsage, stderr);
    return 2;
  } catch (const std::exception& e) {
    TANDEM_ERROR(tools, "%s", e.what());
    return 1;
  }
}
