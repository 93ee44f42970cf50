// The timeline: a Chrome-trace JSON file (open in chrome://tracing or
// Perfetto) written by rank 0. Each tensor gets a row (tid) named after it;
// its phases are duration events: NEGOTIATE (announced until ready
// everywhere), QUEUE (ready until its batch starts), COPY_IN (into the
// fusion buffer; empty when the allreduce reads the tensors where they lie),
// the collective itself (ALLREDUCE, ..., including the unpacking into the
// tensors, which happens inside it), COPY_OUT (marks the end). Cycles
// are instant events on row 0 when marking is on. Counter tracks (the
// straggler report's share of the time each rank held the set) are
// counter events of the process.
//
// Thread-safe: the background thread writes events, API threads start and
// stop it. Stopping closes the JSON array, so the file is valid JSON.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tandem::runtime {

class Timeline {
 public:
  ~Timeline();
  // Throws SystemError when the file cannot be created. Restarting stops
  // the current file first.
  void start(const std::string& path, bool mark_cycles);
  void stop();
  bool active() const;

  void begin(const std::string& tensor, const char* phase);
  void end(const std::string& tensor);
  void mark_cycle();
  // One sample of a counter track: a value per series.
  void counter(const std::string& name, const std::vector<std::pair<std::string, double>>& values);

 private:
  int64_t now_us() const;
  int tid_locked(const std::string& tensor);
  void write_locked(const std::string& event);

  mutable std::mutex mu_;
  // Mirrors file_ != nullptr: begin/end run several times per tensor and
  // cycle, and with the timeline off (the usual case) they must cost a load,
  // not a lock.
  std::atomic<bool> on_{false};
  std::FILE* file_ = nullptr;
  bool first_ = true;
  bool mark_cycles_ = false;
  std::chrono::steady_clock::time_point t0_;
  std::unordered_map<std::string, int> tids_;
};

}  // namespace tandem::runtime
