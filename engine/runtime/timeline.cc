#include "runtime/timeline.h"

#include <cerrno>

#include "common/errors.h"

namespace tandem::runtime {
namespace {

// Tensor names come from users: escape what JSON requires.
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace

Timeline::~Timeline() { stop(); }

void Timeline::start(const std::string& path, bool mark_cycles) {
  stop();
  std::lock_guard<std::mutex> lock(mu_);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw SystemError("timeline: cannot create '" + path + "'", errno);
  file_ = f;
  on_.store(true, std::memory_order_relaxed);
  first_ = true;
  mark_cycles_ = mark_cycles;
  t0_ = std::chrono::steady_clock::now();
  tids_.clear();
  std::fputs("[\n", file_);
  write_locked(R"({"name":"process_name","ph":"M","pid":1,"args":{"name":"tandem runtime"}})");
  write_locked(R"({"name":"thread_name","ph":"M","pid":1,"tid":0,"args":{"name":"cycles"}})");
}

void Timeline::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_) return;
  std::fputs("\n]\n", file_);
  std::fclose(file_);
  file_ = nullptr;
  on_.store(false, std::memory_order_relaxed);
}

bool Timeline::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return file_ != nullptr;
}

int64_t Timeline::now_us() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                               t0_)
      .count();
}

int Timeline::tid_locked(const std::string& tensor) {
  auto it = tids_.find(tensor);
  if (it != tids_.end()) return it->second;
  int tid = static_cast<int>(tids_.size()) + 1;
  tids_[tensor] = tid;
  write_locked(R"({"name":"thread_name","ph":"M","pid":1,"tid":)" + std::to_string(tid) +
               R"(,"args":{"name":)" + json_string(tensor) + "}}");
  return tid;
}

void Timeline::write_locked(const std::string& event) {
  if (!first_) std::fputs(",\n", file_);
  first_ = false;
  std::fputs(event.c_str(), file_);
}

void Timeline::begin(const std::string& tensor, const char* phase) {
  if (!on_.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_) return;
  int tid = tid_locked(tensor);
  write_locked(R"({"name":")" + std::string(phase) + R"(","ph":"B","pid":1,"tid":)" +
               std::to_string(tid) + R"(,"ts":)" + std::to_string(now_us()) + "}");
}

void Timeline::end(const std::string& tensor) {
  if (!on_.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_) return;
  int tid = tid_locked(tensor);
  write_locked(R"({"ph":"E","pid":1,"tid":)" + std::to_string(tid) + R"(,"ts":)" +
               std::to_string(now_us()) + "}");
}

void Timeline::mark_cycle() {
  if (!on_.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_ || !mark_cycles_) return;
  write_locked(R"({"name":"CYCLE_START","ph":"i","s":"p","pid":1,"tid":0,"ts":)" +
               std::to_string(now_us()) + "}");
}

void Timeline::counter(const std::string& name,
                       const std::vector<std::pair<std::string, double>>& values) {
  if (!on_.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_) return;
  std::string args;
  for (const auto& [key, value] : values) {
    char number[32];
    std::snprintf(number, sizeof number, "%.4g", value);
    args += (args.empty() ? "" : ",") + json_string(key) + ":" + number;
  }
  write_locked(R"({"name":)" + json_string(name) + R"(,"ph":"C","pid":1,"ts":)" +
               std::to_string(now_us()) + R"(,"args":{)" + args + "}}");
}

}  // namespace tandem::runtime
