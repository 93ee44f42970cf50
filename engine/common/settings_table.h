// The one table of the engine's environment settings: every TANDEM_*/HOROVOD_*
// variable the engine reads is declared here once, with its type, its
// default, its bounds and one line of documentation, and the readers of
// common/settings.h read a variable only through its declaration (asking for
// a name that is not here is a programming error). docs/settings.md is the
// users' copy of this table; tests/docs/check_settings.py keeps the two in
// step and tests/docs/check_env_reads.py fails when code reads the
// environment around the readers.
//
// Header only, so that the log (linked alone into the plugin and the tools)
// and the Python checks see the same list. One declaration per line group,
// in the order of docs/settings.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tandem {

enum class SettingType {
  kBool,     // 1/0, true/false, yes/no, on/off
  kInt,      // decimal integer in [min, max]
  kBytes,    // decimal integer count of bytes in [min, max]
  kNumber,   // finite number in [min, max] (milliseconds, where the doc says so)
  kSeconds,  // finite number of seconds in [min, max], fractions allowed
  kString,   // free text (a path, an address, a name)
  kEnum,     // one of `choices`
  kList,     // comma-separated words of `choices`
};

struct SettingDecl {
  const char* name;
  const char* horovod_name;  // the Horovod name also honoured, or nullptr
  SettingType type;
  const char* default_text;  // as a user would write it; "" when unset means none
  double min;                // kInt, kBytes, kNumber, kSeconds
  double max;
  const char* choices;  // kEnum, kList: comma separated; else ""
  const char* doc;      // one line
};

inline constexpr double kWeekSeconds = 7 * 86400.0;

// clang-format off
inline constexpr SettingDecl kSettings[] = {
  // Logging (common/log.h)
  {"TANDEM_LOG", "HOROVOD_LOG_LEVEL", SettingType::kEnum, "warn", 0, 0, "error,warn,info,debug,trace",
   "the most detailed level printed on stderr"},
  {"TANDEM_LOG_SUBSYS", nullptr, SettingType::kList, "all", 0, 0,
   "bootstrap,elastic,shm,tcp,coll,runtime,gpu,api,plugin,tools,python,all",
   "the subsystems whose info, debug and trace lines are printed"},
  // Joining the job (bootstrap/)
  {"TANDEM_BOOTSTRAP", nullptr, SettingType::kEnum, "auto", 0, 0, "auto,pmix,tcp,single",
   "how to join the job"},
  {"TANDEM_PMIX_LIBRARY", nullptr, SettingType::kString, "", 0, 0, "",
   "libpmix to open at run time; when set only it is tried"},
  // One bound for both readers: the elastic service waits in whole
  // milliseconds, and the bootstrap rounded anything shorter up to one.
  {"TANDEM_BOOTSTRAP_TIMEOUT", nullptr, SettingType::kSeconds, "60", 0.001, 86400, "",
   "seconds to reach PMIx or the store and exchange identities"},
  {"TANDEM_RENDEZVOUS_ADDR", nullptr, SettingType::kString, "", 0, 0, "",
   "host:port of the TCP store"},
  {"TANDEM_RENDEZVOUS_TOKEN", nullptr, SettingType::kString, "", 0, 0, "",
   "per-job secret every store connection presents"},
  {"TANDEM_RENDEZVOUS_SERVE", nullptr, SettingType::kEnum, "rank0", 0, 0, "rank0,external",
   "who runs the TCP store"},
  {"TANDEM_RANK", nullptr, SettingType::kInt, "", 0, 1 << 24, "",
   "this rank, with the TCP store"},
  {"TANDEM_SIZE", nullptr, SettingType::kInt, "", 1, 1 << 24, "",
   "the world size, with the TCP store"},
  {"TANDEM_NNODES", nullptr, SettingType::kInt, "", 1, 1 << 24, "",
   "node count of the step, set by the plugin"},
  {"TANDEM_NODE_NAME", nullptr, SettingType::kString, "", 0, 0, "",
   "ranks with the same name share a node"},
  {"TANDEM_JOB_ID", nullptr, SettingType::kString, "", 0, 0, "",
   "names the job's shared-memory segments under the TCP store"},
  {"HOROVOD_RANK", nullptr, SettingType::kInt, "", 0, 1 << 24, "",
   "this task's rank as the plugin set it"},
  {"HOROVOD_HOSTNAME", nullptr, SettingType::kString, "", 0, 0, "",
   "the node name the plugin set"},
  // Elastic jobs (elastic/)
  {"TANDEM_ELASTIC_MIN_NP", nullptr, SettingType::kInt, "1", 1, 1 << 24, "",
   "fewest ranks a generation may have"},
  {"TANDEM_ELASTIC_MAX_NP", nullptr, SettingType::kInt, "16777216", 1, 1 << 24, "",
   "most ranks a generation may have"},
  {"TANDEM_ELASTIC_RESET_LIMIT", nullptr, SettingType::kInt, "", 0, 1 << 30, "",
   "how many times the job may move to a new generation; unset: no limit"},
  {"HOROVOD_ELASTIC_TIMEOUT", nullptr, SettingType::kSeconds, "600", 0.001, 30 * 86400.0, "",
   "seconds the service waits for enough ranks"},
  {"TANDEM_ELASTIC_PING_TIMEOUT", nullptr, SettingType::kSeconds, "10", 0.001, 86400, "",
   "seconds a rank may take to answer the service's ping"},
  {"TANDEM_ELASTIC_DIR", nullptr, SettingType::kString, "", 0, 0, "",
   "where the first elastic step writes how later steps find its service"},
  {"TANDEM_ELASTIC_ADDR", nullptr, SettingType::kString, "", 0, 0, "",
   "host:port of the membership service"},
  {"TANDEM_ELASTIC_TOKEN", nullptr, SettingType::kString, "", 0, 0, "",
   "the job's secret for the membership service"},
  {"TANDEM_ELASTIC_LABEL", nullptr, SettingType::kString, "", 0, 0, "",
   "how the service names the process"},
  {"TANDEM_ELASTIC_ORDER", nullptr, SettingType::kInt, "", 0, 1 << 30, "",
   "the order in which new processes of a generation get ranks"},
  // Data path (transport/, shm/, collectives/)
  {"TANDEM_TIMEOUT", nullptr, SettingType::kSeconds, "300", 0.001, kWeekSeconds, "",
   "seconds any wait may go without progress"},
  {"TANDEM_TCP_IFNAME", nullptr, SettingType::kString, "", 0, 0, "",
   "interface the TCP transport listens on"},
  {"TANDEM_TCP_SPIN_US", nullptr, SettingType::kInt, "100", 0, 1000000, "",
   "microseconds a TCP call polls after the last byte moved"},
  {"TANDEM_TCP_PIECE_BYTES", nullptr, SettingType::kBytes, "0", 0, 1099511627776.0, "",
   "bytes by which a TCP sendrecv moves both directions in step; 0 chooses"},
  {"TANDEM_TCP_CONNECT", nullptr, SettingType::kEnum, "planned", 0, 0, "planned,all",
   "which TCP connections a transport opens at start-up"},
  {"TANDEM_TCP_STATS", nullptr, SettingType::kBool, "0", 0, 0, "",
   "1: each TCP transport prints at exit how its calls waited"},
  {"TANDEM_ALLREDUCE_ALGORITHM", nullptr, SettingType::kEnum, "auto", 0, 0,
   "auto,recursive_doubling,halving_doubling,ring", "allreduce between nodes"},
  {"TANDEM_SHM_CHUNK_BYTES", nullptr, SettingType::kBytes, "524288", 4096, 64 << 20, "",
   "bytes per rank per shared-memory pipeline step"},
  {"TANDEM_SHM_MAX_CHUNK_BYTES", nullptr, SettingType::kBytes, "4194304", 4096, 64 << 20, "",
   "the staged allreduce's largest step per rank"},
  {"TANDEM_SHM_ARENA_BYTES", nullptr, SettingType::kBytes, "67108864", 0, 68719476736.0, "",
   "per-rank shared space for fused buffers"},
  {"TANDEM_SHM_SPIN_US", nullptr, SettingType::kInt, "50", 0, 1000000, "",
   "microseconds a node-local wait polls before it sleeps"},
  {"TANDEM_SHM_CMA", nullptr, SettingType::kInt, "1", 0, 2, "",
   "single-copy transfers between local ranks: 1 timed, 2 always, 0 never"},
  {"TANDEM_SHM_STATS", nullptr, SettingType::kInt, "0", 0, 1, "",
   "1: each local rank prints its node-local collectives at exit"},
  // Runtime (runtime/)
  {"TANDEM_FUSION_THRESHOLD", "HOROVOD_FUSION_THRESHOLD", SettingType::kBytes, "134217728", 0,
   1099511627776.0, "", "bytes of the largest fused buffer; 0 turns fusion off"},
  {"TANDEM_CYCLE_TIME", "HOROVOD_CYCLE_TIME", SettingType::kNumber, "0.5", 0, 60000, "",
   "milliseconds, the longest batching window once work arrives"},
  {"TANDEM_IDLE_WAIT", nullptr, SettingType::kNumber, "1.0", 0, 60000, "",
   "milliseconds an idle rank waits before it checks on its peers"},
  {"TANDEM_WAKE_RELAY", nullptr, SettingType::kBool, "1", 0, 0, "",
   "across nodes, relay round requests so that idle ranks sleep"},
  {"TANDEM_CACHE_CAPACITY", "HOROVOD_CACHE_CAPACITY", SettingType::kInt, "1024", 0, 1 << 20, "",
   "response-cache entries per process set; 0 turns it off"},
  {"TANDEM_TIMELINE", "HOROVOD_TIMELINE", SettingType::kString, "", 0, 0, "",
   "path of the Chrome-trace timeline written by rank 0"},
  {"TANDEM_TIMELINE_MARK_CYCLES", "HOROVOD_TIMELINE_MARK_CYCLES", SettingType::kBool, "0", 0, 0,
   "", "1 marks every cycle in the timeline"},
  {"TANDEM_STALL_CHECK_TIME_SECONDS", "HOROVOD_STALL_CHECK_TIME_SECONDS", SettingType::kSeconds,
   "60", 0, kWeekSeconds, "", "seconds before rank 0 warns about a stalled tensor; 0 off"},
  {"TANDEM_STALL_SHUTDOWN_TIME_SECONDS", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS",
   SettingType::kSeconds, "0", 0, kWeekSeconds, "",
   "seconds before such a stall stops the runtime; 0 never"},
  {"TANDEM_DEADLOCK_CHECK_SECONDS", nullptr, SettingType::kSeconds, "1", 0, kWeekSeconds, "",
   "seconds a rank must have waited on handles before it reports its waits; 0 off"},
  {"TANDEM_RUNTIME_SCHEDULING", nullptr, SettingType::kEnum, "other", 0, 0, "other,batch",
   "Linux scheduling policy of the runtime thread"},
  {"TANDEM_STRAGGLER_REPORT", nullptr, SettingType::kSeconds, "0", 0, kWeekSeconds, "",
   "seconds between rank 0's reports of the rank the set waits for; 0 off"},
  {"TANDEM_AUTOTUNE", "HOROVOD_AUTOTUNE", SettingType::kBool, "0", 0, 0, "",
   "1: rank 0 tunes fusion threshold, cycle time and cache while training"},
  {"TANDEM_AUTOTUNE_LOG", "HOROVOD_AUTOTUNE_LOG", SettingType::kString, "", 0, 0, "",
   "CSV file rank 0 writes one row per autotune sample to (Horovod's columns)"},
  {"TANDEM_AUTOTUNE_WARMUP_SAMPLES", "HOROVOD_AUTOTUNE_WARMUP_SAMPLES", SettingType::kInt, "3", 0,
   1000000, "", "autotune samples discarded before scoring starts"},
  {"TANDEM_AUTOTUNE_STEPS_PER_SAMPLE", "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", SettingType::kInt,
   "10", 1, 1000000, "", "steps in each of an autotune sample's five windows"},
  {"TANDEM_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES",
   SettingType::kInt, "20", 1, 100000, "",
   "scored samples of fusion threshold and cycle time before the cache is tried"},
  {"TANDEM_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE",
   SettingType::kNumber, "0.8", 0.000001, 100, "",
   "the autotuner's model noise, relative to the scores' spread"},
  // GPU path (gpu/)
  {"TANDEM_CUDA_LIBRARY", nullptr, SettingType::kString, "", 0, 0, "",
   "CUDA runtime to load; when set only it is tried"},
  {"TANDEM_NCCL_LIBRARY", nullptr, SettingType::kString, "", 0, 0, "",
   "NCCL to load; when set only it is tried"},
  {"TANDEM_GPU_DEVICE", nullptr, SettingType::kInt, "", 0, 1024, "",
   "CUDA device index of this rank"},
};
// clang-format on

// Variables that are not settings but facts the engine takes from its
// launcher; they are read through environment_fact() (common/settings.h),
// each for the reason given. No TANDEM_* or HOROVOD_* name belongs here.
struct EnvironmentFact {
  const char* name;
  const char* reason;
};

// clang-format off
inline constexpr EnvironmentFact kEnvironmentFacts[] = {
  {"PMIX_RANK", "a PMIx launcher started this process: join through PMIx"},
  {"PMIX_NAMESPACE", "a PMIx launcher started this process: join through PMIx"},
  {"PMIX_SERVER_TMPDIR", "PMIx_Init fails noisily when the server's folder is not visible"},
  {"SLURM_PROCID", "Slurm's task id, to catch a plugin that copied one task's variables"},
  {"SLURMD_NODENAME", "the Slurm node name, the default node name of a rank"},
  {"CUDA_VISIBLE_DEVICES", "the GPUs the binding gave the task, named in the straggler report"},
  {"PYXIS_VERSION", "set inside a pyxis container: names pyxis in the message"},
  {"PMI_SIZE", "a PMI-1/PMI-2 launcher (MPICH's hydra, srun --mpi=pmi2) started this process"},
  {"OMPI_COMM_WORLD_SIZE", "an Open MPI launcher started this process"},
};
// clang-format on

inline constexpr size_t kSettingCount = sizeof(kSettings) / sizeof(kSettings[0]);

// The index in kSettings of `name` (its Tandem or its Horovod name), or
// kSettingCount. The compile-time readers below go by index: through a
// pointer, GCC's -fsanitize=null checks each `d->` against null in a way its
// constant evaluation cannot fold, and they would not compile in a
// sanitized build (contrib/sanitize.sh).
constexpr size_t setting_index(std::string_view name) {
  for (size_t i = 0; i < kSettingCount; ++i) {
    const SettingDecl& d = kSettings[i];
    if (name == d.name || (d.horovod_name != nullptr && name == d.horovod_name)) return i;
  }
  return kSettingCount;
}

// The declaration of `name` (its Tandem or its Horovod name), or nullptr.
constexpr const SettingDecl* find_setting(std::string_view name) {
  const size_t i = setting_index(name);
  return i < kSettingCount ? &kSettings[i] : nullptr;
}

// The declared default of `name`, "" when it has none or is not declared.
constexpr const char* declared_default_text(std::string_view name) {
  const size_t i = setting_index(name);
  return i < kSettingCount ? kSettings[i].default_text : "";
}

constexpr const EnvironmentFact* find_environment_fact(std::string_view name) {
  for (const EnvironmentFact& f : kEnvironmentFacts)
    if (name == f.name) return &f;
  return nullptr;
}

// The declared default of an integer setting, for the places that need it
// at compile time (a struct's initial value). A declaration whose default is
// not a plain decimal integer does not compile there.
constexpr int64_t declared_default_int(std::string_view name) {
  const char* text = declared_default_text(name);
  if (text[0] == '\0') throw "no such integer default";
  int64_t x = 0;
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9') throw "not a decimal integer";
    x = x * 10 + (*c - '0');
  }
  return x;
}

// Likewise for a number ("0.5", "60"): digits with an optional fraction.
constexpr double declared_default_number(std::string_view name) {
  const char* text = declared_default_text(name);
  if (text[0] == '\0') throw "no such numeric default";
  double x = 0, scale = 0;
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c == '.' && scale == 0) {
      scale = 1;
    } else if (*c >= '0' && *c <= '9') {
      if (scale != 0) {
        scale /= 10;
        x += (*c - '0') * scale;
      } else {
        x = x * 10 + (*c - '0');
      }
    } else {
      throw "not a plain decimal number";
    }
  }
  return x;
}

}  // namespace tandem
