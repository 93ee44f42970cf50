// Node-local synchronisation over the control block: a barrier among the
// local ranks that spins briefly, then sleeps on a futex in the segment, and
// always ends: when every rank arrived, when a peer process died (checked
// with pidfds between futex sleeps, so a SIGKILL is noticed within one
// sleep), when the deadline passes (a stopped peer), or when another rank
// aborted the group.
// The first rank to see a failure records it in the segment so that every
// survivor fails with the same error naming the same rank.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "shm/control.h"

namespace tandem {

// What this rank's waits cost, counted always (plain increments) and
// printed at exit with TANDEM_SHM_STATS=1 (docs/engine.md, "Waiting"): how
// each wait ended, how often it yielded and slept.
struct WaitStats {
  uint64_t waits = 0;        // wait() calls
  uint64_t ready = 0;        // ...that found every rank arrived on entry
  uint64_t spun = 0;         // ...that ended in the pause spin
  uint64_t yielded = 0;      // ...that ended in the yield phase
  uint64_t slept = 0;        // ...that went to the futex at least once
  uint64_t yields = 0;       // sched_yield calls
  uint64_t sleeps = 0;       // futex_wait calls
  uint64_t wait_ns = 0;      // time inside wait() when not ready on entry
  uint64_t wait_cpu_ns = 0;  // ...of it on a CPU (spinning, yielding), when measured
};

class NodeSync {
 public:
  // world_ranks[i] is the world rank of local rank i (for messages).
  NodeSync(ControlBlock* control, int local_rank, std::vector<int> world_ranks,
           std::chrono::milliseconds timeout, int spin_us);
  ~NodeSync();
  NodeSync(const NodeSync&) = delete;
  NodeSync& operator=(const NodeSync&) = delete;

  // Call once every local rank has written its pid and CPUs (the
  // constructor does; call this after the setup barrier): opens the peers'
  // pidfds and decides how waits poll (waiting()).
  void watch_peers();
  // How a wait polls before it sleeps on the futex, from every local rank's
  // CPU set (a bound rank's own is one core: the others' count too).
  enum class Polling {
    kSpin,           // no two ranks share a CPU: spin, no rank can need ours
    kSpinThenYield,  // enough CPUs, but ranks may meet on one: 1 us, then yield
    kYield,          // more ranks than CPUs: yield at once, a peer needs ours
  };
  Polling polling() const { return polling_; }

  // Where this rank puts up to kInlineBytes that peers read right after the
  // next barrier (its arrival carries them), and where peer r's are then.
  unsigned char* inline_out() { return control_->ranks[me_].inline_data[(epoch_ + 1) & 1]; }
  const unsigned char* inline_in(int r) const { return control_->ranks[r].inline_data[epoch_ & 1]; }

  // Arrives, waits until every local rank arrived as often as this one,
  // then wakes the ranks that went to sleep waiting. `what` names the
  // operation in errors. Throws PeerLostError, TimeoutError, AbortedError.
  void barrier(const char* what) {
    arrive();
    wait(what);
    wake_sleepers();
  }

  // Records a failure for every local rank (first one wins) and wakes them.
  void abort(AbortKind kind, const std::string& message);
  // Throws the recorded failure, if any.
  void check_aborted() const;
  bool aborted() const { return control_->abort_state.load() == 2; }

  const WaitStats& stats() const { return stats_; }
  // Also measure the CPU time waits take (a system call per wait).
  void measure_wait_cpu(bool on) { measure_cpu_ = on; }

  // Fails (PeerLostError naming it, recorded for every local rank) if a
  // peer process has died. One poll() over the peers' pidfds.
  void check_alive(const char* what);
  int world_rank(int local_rank) const { return world_ranks_.at(local_rank); }
  // Records that local rank r died (PeerLostError naming it, for every
  // local rank) and throws it.
  [[noreturn]] void peer_died(const char* what, int r);

 private:
  void arrive();
  void wait(const char* what);
  void wake_sleepers();
  bool all_arrived(uint64_t target) const;
  std::string missing(uint64_t target) const;
  void check_peers(const char* what, uint64_t target);
  void wake_all();

  ControlBlock* control_;
  int me_;
  int n_;
  std::vector<int> world_ranks_;
  std::chrono::milliseconds timeout_;
  int spin_us_;
  Polling polling_;
  uint64_t epoch_ = 0;
  std::vector<int> pidfds_;  // -1 for this process (threads) or when unavailable
  WaitStats stats_;
  bool measure_cpu_ = false;
};

}  // namespace tandem
