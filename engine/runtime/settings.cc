#include "runtime/settings.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <strings.h>

#include "common/errors.h"
#include "common/settings.h"

namespace tandem::runtime {

const std::vector<SettingSpec>& runtime_setting_specs() {
  static const std::vector<SettingSpec> specs = {
      {"TANDEM_FUSION_THRESHOLD", "HOROVOD_FUSION_THRESHOLD", "134217728",
       "Bytes: the largest fused allreduce buffer. Ready allreduces of the same dtype, op and "
       "scale are packed up to this size; 0 turns fusion off."},
      {"TANDEM_CYCLE_TIME", "HOROVOD_CYCLE_TIME", "0.5",
       "Milliseconds: the longest batching window. When work arrives the cycle starts once "
       "enqueues pause for 100 microseconds or a thread waits on a handle, at the latest "
       "this long after the first enqueue, so that tensors enqueued back to back share a "
       "cycle; 0 starts it at once."},
      {"TANDEM_IDLE_WAIT", nullptr, "1.0",
       "Milliseconds an idle rank waits for work before running an empty negotiation round, "
       "when the world spans nodes and TANDEM_WAKE_RELAY is 0 (peers that have work are not "
       "held up). Otherwise peers wake idle ranks and this is not used."},
      {"TANDEM_WAKE_RELAY", nullptr, "1",
       "1: when the world spans nodes, every node's first rank relays round requests from "
       "the other nodes (UDP, to the address the TCP transport uses) and idle ranks sleep "
       "until asked, with a round every 25 ms as the fallback. 0: idle ranks run an empty "
       "round every TANDEM_IDLE_WAIT instead (for sites that block UDP between nodes)."},
      {"TANDEM_CACHE_CAPACITY", "HOROVOD_CACHE_CAPACITY", "1024",
       "Entries of the response cache per process set; 0 turns it off (every tensor is "
       "negotiated in full every step)."},
      {"TANDEM_TIMELINE", "HOROVOD_TIMELINE", "(unset)",
       "Path of a Chrome-trace JSON timeline written by rank 0 from init on."},
      {"TANDEM_TIMELINE_MARK_CYCLES", "HOROVOD_TIMELINE_MARK_CYCLES", "0",
       "1 to mark every cycle in the timeline."},
      {"TANDEM_STALL_CHECK_TIME_SECONDS", "HOROVOD_STALL_CHECK_TIME_SECONDS", "60",
       "Seconds after which rank 0 warns about a tensor that some ranks enqueued and others "
       "did not, naming both; 0 turns the check off."},
      {"TANDEM_STALL_SHUTDOWN_TIME_SECONDS", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", "0",
       "Seconds after which such a stall fails every pending operation on every rank "
       "(TANDEM_ERR_TIMEOUT); 0 waits forever."},
      {"TANDEM_DEADLOCK_CHECK_SECONDS", nullptr, "1",
       "Seconds a rank's threads must have waited on handles, with nothing enqueued on the "
       "rank meanwhile, before the rank tells the others what it waits in. When the ranks "
       "that wait can never go on (each waits for a collective another waiting rank has not "
       "started: diverged code or names), every rank fails at once with one message naming "
       "each rank's wait (TANDEM_ERR_ABORTED) and the runtime stops. A rank busy elsewhere "
       "(slow, checkpointing) never counts as blocked. 0 turns the check off (for programs "
       "where one thread waits while another thread of the same rank will enqueue what the "
       "peers wait for)."},
      {"TANDEM_RUNTIME_SCHEDULING", nullptr, "other",
       "other or batch: the Linux scheduling policy of the runtime's background thread. "
       "other (SCHED_OTHER): its wake-ups preempt the framework's thread, so a step's "
       "negotiation and allreduces run while the framework still computes, even on one "
       "core per rank. batch (SCHED_BATCH): the same CPU share but no preemption on "
       "wake-up; back-to-back enqueues without compute between them are ~10% faster, but "
       "a training step waits for the framework's time slice (measured 2-3x slower "
       "training with one core per rank). Device batches always run under other."},
  };
  return specs;
}

namespace {

bool parse_scheduling(const char* var, const char* v) {
  if (strcasecmp(v, "other") == 0) return false;
  if (strcasecmp(v, "batch") == 0) return true;
  throw InvalidArgument(std::string(var) + "='" + v +
                        "': expected other or batch; fix or unset the variable");
}

constexpr double kMaxSeconds = 7 * 86400.0;  // a week: catches typos like 6e10

}  // namespace

Settings Settings::from_environment(const Getenv& getenv_fn) {
  Getenv get = getenv_fn ? getenv_fn : [](const char* n) -> const char* { return std::getenv(n); };
  Settings s;
  // Returns the value and the variable it came from, or nullptr when unset.
  auto value = [&](const SettingSpec& spec, const char** var) -> const char* {
    // Empty means unset, as everywhere in the engine (common/settings.h).
    auto lookup = [&](const char* n) -> const char* {
      const char* v = n ? get(n) : nullptr;
      return (v && *v) ? v : nullptr;
    };
    const char* t = lookup(spec.name);
    const char* h = lookup(spec.horovod_name);
    if (t && h && std::strcmp(t, h) != 0)
      throw InvalidArgument(std::string(spec.name) + "='" + t + "' and " + spec.horovod_name +
                            "='" + h + "' disagree; set only one of them");
    *var = t ? spec.name : spec.horovod_name;
    return t ? t : h;
  };
  for (const SettingSpec& spec : runtime_setting_specs()) {
    const char* var = nullptr;
    const char* v = value(spec, &var);
    if (!v) continue;
    std::string n = spec.name;
    // The strict parsers are the engine's (common/settings.h); the ranges
    // are here, next to the declarations.
    if (n == "TANDEM_FUSION_THRESHOLD")
      s.fusion_threshold_bytes =
          static_cast<size_t>(parse_int_setting(var, v, 0, int64_t{1} << 40));
    else if (n == "TANDEM_CYCLE_TIME") s.cycle_time_ms = parse_double_setting(var, v, 0, 60000);
    else if (n == "TANDEM_IDLE_WAIT") s.idle_wait_ms = parse_double_setting(var, v, 0, 60000);
    else if (n == "TANDEM_WAKE_RELAY") s.wake_relay = parse_bool_setting(var, v);
    else if (n == "TANDEM_CACHE_CAPACITY")
      s.cache_capacity = static_cast<size_t>(parse_int_setting(var, v, 0, 1 << 20));
    else if (n == "TANDEM_TIMELINE") s.timeline_path = v;
    else if (n == "TANDEM_TIMELINE_MARK_CYCLES")
      s.timeline_mark_cycles = parse_bool_setting(var, v);
    else if (n == "TANDEM_STALL_CHECK_TIME_SECONDS")
      s.stall_check_seconds = parse_double_setting(var, v, 0, kMaxSeconds);
    else if (n == "TANDEM_STALL_SHUTDOWN_TIME_SECONDS")
      s.stall_shutdown_seconds = parse_double_setting(var, v, 0, kMaxSeconds);
    else if (n == "TANDEM_DEADLOCK_CHECK_SECONDS")
      s.deadlock_check_seconds = parse_double_setting(var, v, 0, kMaxSeconds);
    else if (n == "TANDEM_RUNTIME_SCHEDULING") s.batch_scheduling = parse_scheduling(var, v);
    else throw Error("runtime: setting " + n + " is declared but not parsed (a bug)");
    if (std::strcmp(v, spec.default_text) != 0) note_setting(var, v, spec.default_text);
  }
  return s;
}

}  // namespace tandem::runtime
