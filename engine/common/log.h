// The one log of the engine, the plugin and the tools: a level and a
// subsystem per message, in the spirit of NCCL_DEBUG / NCCL_DEBUG_SUBSYS.
//
//   TANDEM_LOG=error|warn|info|debug|trace   (default warn: warnings and errors)
//   TANDEM_LOG_SUBSYS=tcp,bootstrap          (default all; "^shm" is all but shm)
//
// HOROVOD_LOG_LEVEL (trace, debug, info, warning, error, fatal) is honoured
// as Horovod's name for TANDEM_LOG; both set to different levels is an error.
// The subsystem filter applies to info, debug and trace: warnings and errors
// are always printed, whatever the subsystem (they are rare, and a filter
// must never hide why a job failed).
//
// A message is one line on stderr, written with one write(2) so that lines
// of threads and ranks never interleave:
//
//   tandem[r3 node2] INFO tcp: listening on eth0 10.0.0.2:41723
//   tandem[r3 node2] WARN tcp connector.cc:347: world rank 3: rejected a connection from ...
//
// The prefix names the program ("tandem" in libtandem, "tandem-run" in that
// tool) and, once the bootstrap knows it, the rank and node (set_identity).
// Warnings carry the file and line that issued them.
//
// The disabled path costs one relaxed load and a branch, and the message's
// arguments are not evaluated: TANDEM_DEBUG(tcp, "%s", expensive().c_str())
// costs nothing unless tcp debug is on. Until configure() runs (tandem_init,
// the plugin, each tool's main), every level counts as enabled and the first
// message configures the log from the environment (a bad value is then
// reported once, on stderr, and the defaults kept); configure_from_environment()
// itself throws InvalidArgument naming the variable and the value.
//
// The log's configuration, identity and sink are process-wide state, like
// NCCL's: set once at start-up, read by every layer.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace tandem::log {

enum class Level : uint8_t { kError = 0, kWarn, kInfo, kDebug, kTrace };
constexpr int kLevels = 5;

// The subsystems, by the name TANDEM_LOG_SUBSYS uses. Keep subsystem_name()
// and docs/settings.md in step (a unit test checks the docs).
enum class Subsys : uint8_t {
  bootstrap,  // joining the job: PMIx, the TCP store, the identity
  elastic,    // elastic jobs: the membership service, generations (docs/elastic.md)
  shm,        // shared memory inside a node
  tcp,        // the TCP transport between nodes, the wake relay
  coll,       // collectives and the Communicator: layout, algorithms
  runtime,    // the background thread: negotiation, fusion, stalls
  gpu,        // the NCCL path
  api,        // the C API: init, finalize, settings
  plugin,     // the Slurm SPANK plugin
  tools,      // tandem-run, tandem-bench, ...
  python,     // the Python package (its "tandem" logger)
  kCount
};
constexpr int kSubsystems = static_cast<int>(Subsys::kCount);
constexpr uint32_t kAllSubsystems = (1u << kSubsystems) - 1;

constexpr const char* kLevelVariable = "TANDEM_LOG";
constexpr const char* kSubsysVariable = "TANDEM_LOG_SUBSYS";
constexpr const char* kHorovodLevelVariable = "HOROVOD_LOG_LEVEL";

const char* level_name(Level level);        // "WARN"
const char* subsystem_name(Subsys subsys);  // "tcp"

struct Config {
  Level level = Level::kWarn;
  uint32_t subsystems = kAllSubsystems;  // bit i: Subsys i, for info and below
  bool operator==(const Config& o) const { return level == o.level && subsystems == o.subsystems; }
  bool enables(Level l, Subsys s) const;
};

// Strict parsing; nullptr or "" means unset. Throws InvalidArgument naming
// the variable and the value ("TANDEM_LOG='loud': expected one of error,
// warn, info, debug, trace; fix or unset the variable").
Level parse_level(const char* variable, const char* value);
uint32_t parse_subsystems(const char* variable, const char* value);
Config parse_config(const char* level, const char* subsystems, const char* horovod_level);
Config config_from_environment();

// Applies a configuration (thread-safe; takes effect at once everywhere).
void configure(const Config& config);
// configure(config_from_environment()); throws InvalidArgument.
void configure_from_environment();
Config current_config();

// The prefix of every line: the program ("tandem" by default) and, once
// known, "r<rank> <node>". Thread-safe.
void set_program(const std::string& program);
void set_identity(int rank, const std::string& node);
void clear_identity();

struct Record {
  Level level;
  Subsys subsys;
  const char* file;  // basename
  int line;
  std::string_view message;
};
// The line the default sink writes, without the newline.
std::string format(const Record& record);
// Where lines go: stderr by default; the plugin sends them to Slurm, tests
// capture them. nullptr restores the default. The sink is called from any
// thread, one call per message, and must not log.
using Sink = std::function<void(const Record&)>;
void set_sink(Sink sink);

namespace detail {
// Bit i of g_enabled[level] set: Subsys i at that level is printed. All set
// until configured (see above).
extern std::atomic<uint32_t> g_enabled[kLevels];
// Back to the state before anything configured the log (tests of the
// first-message configuration).
void unconfigure_for_tests();
}  // namespace detail

inline bool enabled(Level level, Subsys subsys) {
  return (detail::g_enabled[static_cast<int>(level)].load(std::memory_order_relaxed) >>
          static_cast<int>(subsys)) &
         1u;
}

// printf-style; out of line, called only when enabled() (use the macros).
void write(Level level, Subsys subsys, const char* file, int line, const char* format, ...)
    __attribute__((format(printf, 5, 6)));
// A message already formatted.
void write_string(Level level, Subsys subsys, const char* file, int line, std::string_view message);
// Written whatever the configuration: what the user asked for with a switch
// of its own (TANDEM_SHM_STATS, TANDEM_TCP_STATS) and security events (a
// rejected connection), which no log level may hide.
void write_always(Level level, Subsys subsys, const char* file, int line, std::string_view message);

}  // namespace tandem::log

#define TANDEM_LOG_AT(level, subsys, ...)                                                          \
  do {                                                                                             \
    if (__builtin_expect(::tandem::log::enabled(level, ::tandem::log::Subsys::subsys), 0))         \
      ::tandem::log::write(level, ::tandem::log::Subsys::subsys, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

// TANDEM_INFO(tcp, "listening on %s", name.c_str());
#define TANDEM_ERROR(subsys, ...) TANDEM_LOG_AT(::tandem::log::Level::kError, subsys, __VA_ARGS__)
#define TANDEM_WARN(subsys, ...) TANDEM_LOG_AT(::tandem::log::Level::kWarn, subsys, __VA_ARGS__)
#define TANDEM_INFO(subsys, ...) TANDEM_LOG_AT(::tandem::log::Level::kInfo, subsys, __VA_ARGS__)
#define TANDEM_DEBUG(subsys, ...) TANDEM_LOG_AT(::tandem::log::Level::kDebug, subsys, __VA_ARGS__)
#define TANDEM_TRACE(subsys, ...) TANDEM_LOG_AT(::tandem::log::Level::kTrace, subsys, __VA_ARGS__)
// Whether a level of a subsystem is printed, to skip building what only a
// message would use: if (TANDEM_LOG_ENABLED(kDebug, tcp)) { ... }
#define TANDEM_LOG_ALWAYS(level, subsys, message)                                         \
  ::tandem::log::write_always(::tandem::log::Level::level, ::tandem::log::Subsys::subsys, \
                              __FILE__, __LINE__, message)
#define TANDEM_LOG_ENABLED(level, subsys) \
  ::tandem::log::enabled(::tandem::log::Level::level, ::tandem::log::Subsys::subsys)
