#include "common/log.h"

#include <strings.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "common/errors.h"

namespace tandem::log {

namespace detail {
// Everything on until configured: the first message configures (write()).
std::atomic<uint32_t> g_enabled[kLevels] = {~0u, ~0u, ~0u, ~0u, ~0u};
}  // namespace detail

namespace {

constexpr const char* kLevelNames[kLevels] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
constexpr const char* kSubsystemNames[kSubsystems] = {"bootstrap", "elastic", "shm",   "tcp",
                                                      "coll",      "runtime", "gpu",   "api",
                                                      "plugin",    "tools",   "python"};

struct State {
  std::mutex mu;
  bool configured = false;
  Config config;
  std::string program = "tandem";
  std::string tag;  // "r3 node2"; empty: "pid N" for the engine, nothing for a tool
  bool pid_tag = true;
  Sink sink;
};

// Never destroyed: threads may log while the process exits.
State& state() {
  static State* s = new State();
  return *s;
}

std::atomic<bool> g_configured{false};

const char* value_of(const char* name) {
  const char* v = std::getenv(name);
  return (v == nullptr || *v == '\0') ? nullptr : v;
}

[[noreturn]] void reject(const char* variable, const char* value, const std::string& expected) {
  throw InvalidArgument(std::string(variable) + "='" + value + "': expected " + expected +
                        "; fix or unset the variable");
}

void apply_locked(State& s, const Config& c) {
  s.config = c;
  for (int l = 0; l < kLevels; ++l) {
    const auto level = static_cast<Level>(l);
    uint32_t bits = 0;
    for (int i = 0; i < kSubsystems; ++i)
      if (c.enables(level, static_cast<Subsys>(i))) bits |= 1u << i;
    detail::g_enabled[l].store(bits, std::memory_order_relaxed);
  }
  s.configured = true;
  g_configured.store(true, std::memory_order_release);
}

void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere else to report it
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void emit(Level level, Subsys subsys, const char* file, int line, std::string_view message);

void configure_lazily() {
  State& s = state();
  std::string problem;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.configured) return;
    Config c;
    try {
      c = config_from_environment();
    } catch (const InvalidArgument& e) {
      problem = e.what();
      // Set again: GCC may build the result in `c` itself (return slot) and
      // leave it half written when parsing throws.
      c = Config{};
    }
    apply_locked(s, c);
  }
  if (!problem.empty())
    emit(Level::kError, Subsys::api, __FILE__, __LINE__,
         problem + " (logging warnings and errors)");
}

const char* basename_of(const char* file) {
  const char* slash = std::strrchr(file, '/');
  return slash ? slash + 1 : file;
}

}  // namespace

const char* level_name(Level level) { return kLevelNames[static_cast<int>(level)]; }
const char* subsystem_name(Subsys subsys) { return kSubsystemNames[static_cast<int>(subsys)]; }

bool Config::enables(Level l, Subsys s) const {
  if (l > level) return false;
  if (l <= Level::kWarn) return true;
  return (subsystems >> static_cast<int>(s)) & 1u;
}

Level parse_level(const char* variable, const char* value) {
  for (int l = 0; l < kLevels; ++l)
    if (strcasecmp(value, kLevelNames[l]) == 0) return static_cast<Level>(l);
  // Horovod's spellings (HOROVOD_LOG_LEVEL), accepted under either name.
  if (strcasecmp(value, "warning") == 0) return Level::kWarn;
  if (strcasecmp(value, "fatal") == 0) return Level::kError;
  reject(variable, value, "one of error, warn, info, debug, trace");
}

uint32_t parse_subsystems(const char* variable, const char* value) {
  std::string text(value);
  const bool exclude = !text.empty() && text[0] == '^';
  if (exclude) text.erase(0, 1);
  std::string known;
  for (int i = 0; i < kSubsystems; ++i) known += std::string(i ? ", " : "") + kSubsystemNames[i];
  const std::string expected =
      "a comma-separated list of " + known + " or all (\"^tcp,shm\": all but those)";
  uint32_t mask = 0;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string name = text.substr(start, comma == std::string::npos ? comma : comma - start);
    if (strcasecmp(name.c_str(), "all") == 0) {
      mask = kAllSubsystems;
    } else {
      int found = -1;
      for (int i = 0; i < kSubsystems; ++i)
        if (strcasecmp(name.c_str(), kSubsystemNames[i]) == 0) found = i;
      if (found < 0) reject(variable, value, expected);
      mask |= 1u << found;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return exclude ? (kAllSubsystems & ~mask) : mask;
}

Config parse_config(const char* level, const char* subsystems, const char* horovod_level) {
  auto set = [](const char* v) { return v != nullptr && *v != '\0'; };
  Config c;
  if (set(level) && set(horovod_level) &&
      parse_level(kLevelVariable, level) != parse_level(kHorovodLevelVariable, horovod_level))
    throw InvalidArgument(std::string(kLevelVariable) + "='" + level + "' and " +
                          kHorovodLevelVariable + "='" + horovod_level +
                          "' disagree; set only one of them");
  if (set(level)) c.level = parse_level(kLevelVariable, level);
  else if (set(horovod_level)) c.level = parse_level(kHorovodLevelVariable, horovod_level);
  if (set(subsystems)) c.subsystems = parse_subsystems(kSubsysVariable, subsystems);
  return c;
}

Config config_from_environment() {
  return parse_config(value_of(kLevelVariable), value_of(kSubsysVariable),
                      value_of(kHorovodLevelVariable));
}

void configure(const Config& config) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  apply_locked(s, config);
}

void configure_from_environment() { configure(config_from_environment()); }

Config current_config() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.config;
}

void set_program(const std::string& program) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.program = program;
  s.pid_tag = false;
}

void set_identity(int rank, const std::string& node) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.tag = "r" + std::to_string(rank) + " " + node;
}

void clear_identity() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.tag.clear();
}

void set_sink(Sink sink) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.sink = std::move(sink);
}

std::string format(const Record& r) {
  State& s = state();
  std::string line;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    line = s.program;
    if (!s.tag.empty()) line += "[" + s.tag + "]";
    else if (s.pid_tag) line += "[pid " + std::to_string(::getpid()) + "]";
  }
  line += ' ';
  line += level_name(r.level);
  line += ' ';
  line += subsystem_name(r.subsys);
  if (r.level == Level::kWarn && r.file) {
    line += ' ';
    line += r.file;
    line += ':';
    line += std::to_string(r.line);
  }
  line += ": ";
  line.append(r.message.data(), r.message.size());
  return line;
}

namespace {

void emit(Level level, Subsys subsys, const char* file, int line, std::string_view message) {
  const Record r{level, subsys, file ? basename_of(file) : nullptr, line, message};
  Sink sink;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    sink = s.sink;
  }
  if (sink) {
    sink(r);
    return;
  }
  std::string text = format(r);
  text += '\n';
  write_all(2, text.data(), text.size());
}

}  // namespace

void detail::unconfigure_for_tests() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  for (auto& bits : detail::g_enabled) bits.store(~0u, std::memory_order_relaxed);
  s.configured = false;
  g_configured.store(false, std::memory_order_release);
}

void write_string(Level level, Subsys subsys, const char* file, int line,
                  std::string_view message) {
  if (!g_configured.load(std::memory_order_acquire)) configure_lazily();
  if (enabled(level, subsys)) emit(level, subsys, file, line, message);
}

void write_always(Level level, Subsys subsys, const char* file, int line,
                  std::string_view message) {
  emit(level, subsys, file, line, message);
}

void write(Level level, Subsys subsys, const char* file, int line, const char* fmt, ...) {
  char small[512];
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(small, sizeof small, fmt, args);
  va_end(args);
  std::string message;
  if (n < 0) {
    message = fmt;
  } else if (static_cast<size_t>(n) < sizeof small) {
    message.assign(small, static_cast<size_t>(n));
  } else {
    message.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(message.data(), message.size(), fmt, copy);
    message.resize(static_cast<size_t>(n));
  }
  va_end(copy);
  write_string(level, subsys, file, line, message);
}

}  // namespace tandem::log
