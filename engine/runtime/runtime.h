// The runtime: one per process. Owns the background thread
// ("tandem-runtime"), the process sets, the handles, the timeline and the
// counters. Frameworks enqueue named operations from any thread and get a
// handle; the background thread runs cycles:
//
//   wait for work: tensors enqueued here, or a peer asking for a round
//     (peers on a node wake each other through the shared segment, and a
//     relay per node carries requests between nodes; with
//     TANDEM_WAKE_RELAY=0, and for 20 ms after a busy round, an idle rank
//     across nodes runs an empty round every TANDEM_IDLE_WAIT instead),
//   with work of its own, let the batching window pass: it closes once
//     enqueues pause (kQuietGap) or TANDEM_CYCLE_TIME after the first,
//   for each process set this rank belongs to, in id order:
//     exchange this cycle's announcements, decide (coordinator.h),
//     plan fusion (fusion_plan.h), run the batches (executor.h),
//   check for stalls.
//
// Visiting the sets in id order on every rank keeps the per-set exchanges
// from waiting on each other in a cycle (a total order, as with locks).
// A failure of the data path (lost peer, timeout) fails every pending
// handle with that error and every later call with the same error.
//
// The class is one object, its member functions in one file per concern:
//
//   runtime.cc             construction, stop, the thread's loop, failing everything
//   enqueue.cc             the API threads' entry points: enqueue, join, process-set
//                          changes and their waits (checks in request_validation.h)
//   wake_up.cc             waking the thread, the batching window, BlockedWaiter
//   cycle.cc               one cycle: the per-set exchange, announcements, stalls
//   deadlock_report.cc     what this rank waits in, and the verdict (deadlock.h)
//   straggler_report.cc    each round's wait, the periodic report (straggler.h)
//   autotune_apply.cc      scoring the rounds on rank 0, applying the tuned
//                          values on every rank (autotune.h)
//   dispatch.cc            running a cycle's decisions: batches, device path,
//                          process-set changes
//   process_set_table.h    the sets by id (a class of its own)
//
// Lock order. A thread holding one of these may take only those to its
// right, never one to its left:
//
//   stop_mu_  ->  wait_mu_  ->  a set's mu | join_mu_  ->  broken_mu_
//
// A set's mu and join_mu_ are never held together, nor two sets' mu.
// work_mu_ (the wake-up), straggler_mu_, autotune_mu_, the process-set table's mutex and
// the handles' own locks are leaves: nothing else is locked while one is held, and
// handles are completed outside every lock above. wait_mu_ is held while
// the deadlock report reads the waited handles (describe_waits), so a
// thread leaves its wait (~BlockedWaiter) only through it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/log.h"
#include "runtime/autotune.h"
#include "runtime/counters.h"
#include "runtime/data_path.h"
#include "runtime/deadlock.h"
#include "runtime/device_path.h"
#include "runtime/handle.h"
#include "runtime/process_set.h"
#include "runtime/process_set_table.h"
#include "runtime/request_validation.h"
#include "runtime/settings.h"
#include "runtime/stall_inspector.h"
#include "runtime/straggler.h"
#include "runtime/timeline.h"

namespace tandem::runtime {

// Receives the runtime's messages instead of the log (tests with several
// runtimes in one process read what each would have printed).
using LogTap = std::function<void(log::Level, const std::string&)>;

class Runtime {
 public:
  // Collective over the world: creates the global set's data path. Starts
  // the background thread. device: runs batches of device tensors
  // (device_path.h); without one they fail with TANDEM_ERR_UNSUPPORTED.
  // place: where this rank runs, for the straggler report.
  Runtime(int rank, int size, std::unique_ptr<DataPathFactory> factory, Settings settings,
          LogTap log_tap = nullptr, std::unique_ptr<DevicePath> device = nullptr,
          RankPlace place = {});
  // Asks the other ranks to stop, joins the thread, fails what is pending
  // (TANDEM_ERR_ABORTED) so that every wait ends. Idempotent.
  void stop();
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Validates and queues; throws InvalidArgument, DuplicateNameError,
  // UnsupportedError, or the error that broke the runtime.
  std::shared_ptr<HandleState> enqueue(const std::vector<TensorArg>& tensors, const OpArgs& args);
  std::shared_ptr<HandleState> join();

  // Collective over the world, negotiated like a tensor; blocks until done.
  int add_process_set(std::vector<int> ranks);
  void remove_process_set(int id);
  // Members by set rank; throws InvalidArgument for an unknown id.
  std::vector<int> process_set_ranks(int id) const;

  // Held by an API thread while it blocks on a handle that is not done: a
  // framework that waits has enqueued what it had, so the batching window
  // closes at once instead of waiting for enqueues to pause; and a rank
  // whose threads all wait may be deadlocked (deadlock.h).
  class BlockedWaiter {
   public:
    BlockedWaiter(Runtime& rt, const HandleState& h);
    ~BlockedWaiter();
    BlockedWaiter(const BlockedWaiter&) = delete;
    BlockedWaiter& operator=(const BlockedWaiter&) = delete;

   private:
    Runtime* rt_ = nullptr;
    const HandleState* h_ = nullptr;
  };

  HandleTable& handles() { return handles_; }
  Timeline& timeline() { return timeline_; }
  const Counters& counters() const { return counters_; }
  const Settings& settings() const { return settings_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // The straggler report as JSON (Report::json): {"reports": n, "period":
  // the last period's, "total": the job's so far}; every rank holds the same.
  std::string straggler_json() const;
  // Autotune as JSON: {"on": bool, "settled": bool, "applied": [{"cycle": n,
  // "fusion_threshold": bytes, "cycle_time_ms": x, "cache_enabled": bool},
  // ...]}: every change of the tuned values this rank applied and the cycle
  // after which it did; the same on every rank.
  std::string autotune_json() const;

 private:
  // runtime.cc
  void loop();
  void fail_all(tandem_result_t code, const std::string& message);
  void throw_if_broken() const;
  // To the log (subsystem runtime) or the tap.
  void report(log::Level level, const std::string& message, int line) const;
  void log_setup();

  // enqueue.cc
  // Enqueues a process-set change on the global set and waits for it.
  int negotiate_internal(Request q);
  int wait_internal(const std::shared_ptr<HandleState>& h);

  // wake_up.cc
  void wake();
  bool wait_for_work();  // false: woke for the stall inspector only
  bool has_local_work() const;
  bool has_pending() const;  // tensors (or a join) of this rank not done yet
  void batching_window();

  // cycle.cc
  bool cycle_all();  // false once the runtime stops
  bool cycle(ProcessSet& set, bool* shutdown_seen);
  std::chrono::steady_clock::duration details_after() const;
  CycleMessage announce(ProcessSet& set);
  void reannounce_evicted(ProcessSet& set);
  void check_stalls();

  // deadlock_report.cc
  // What this rank waits in, when it is blocked (deadlock.h); else empty.
  std::vector<Wait> describe_waits();
  // The global set's round: true when the same deadlock was found twice in
  // a row (then every handle has failed and the runtime stops).
  bool deadlocked(std::vector<CycleMessage>& messages);

  // straggler_report.cc
  bool straggler_on() const { return settings_.straggler_report_seconds > 0; }
  // Whether this round starts a report: on the global set's rank 0, once
  // the period passed (or it stops: the summary then includes the rest).
  bool straggler_due(const CycleMessage& mine) const;
  void note_waits(ProcessSet& set, const std::vector<Response>& responses,
                  std::chrono::steady_clock::time_point decided);
  // After the round ran: the next round's waits start here.
  void note_ran(ProcessSet& set, const std::vector<Response>& responses);
  // Collective over the global set, at the same round on every member.
  void exchange_straggler(ProcessSet& set, bool final);

  // autotune_apply.cc
  bool autotune_on() const { return settings_.autotune; }
  // Rank 0: scores the round that ran; the tuner's next values go out in
  // the next round of the global set.
  void autotune_note(const std::vector<Response>& responses);
  // Every rank, after a round of the global set's messages ran: applies the
  // values rank 0 sent in it, if any.
  void autotune_apply(const std::vector<CycleMessage>& messages);

  // dispatch.cc
  void execute(ProcessSet& set, std::vector<Response>& responses);
  void run_internal(Response& r);
  std::vector<DevicePath::Result> run_on_device(ExecContext& ctx, int set_id,
                                                const std::vector<const Response*>& responses,
                                                const std::vector<TensorEntry*>& entries);

  // ---- identity, settings, what the runtime owns
  const int rank_;
  const int size_;
  const Settings settings_;
  LogTap log_tap_;
  std::unique_ptr<DataPathFactory> factory_;
  std::unique_ptr<DevicePath> device_;  // GPU tensors; may be null
  HandleTable handles_;
  Timeline timeline_;
  Counters counters_;
  ProcessSetTable sets_;                   // after factory_: built from it
  DataPath* world_ = nullptr;              // the global set's (lives as long as the runtime)
  std::atomic<uint64_t> internal_seq_{0};  // names of process-set changes

  // ---- join (global set only)
  mutable std::mutex join_mu_;
  std::shared_ptr<HandleState> join_handle_;

  // ---- wake-up and batching (wake_up.cc)
  std::mutex work_mu_;
  std::condition_variable work_cv_;
  std::atomic<bool> work_{false};  // set under work_mu_, cleared by the bg thread
  std::chrono::steady_clock::time_point first_work_;  // under work_mu_
  std::atomic<int64_t> last_work_ns_{0};              // steady clock, of the latest enqueue
  std::atomic<bool> in_window_{false};                // the bg thread is in the batching window
  std::atomic<int> blocked_waiters_{0};               // API threads in a handle wait

  // ---- the cycle (bg thread)
  uint64_t cycles_done_ = 0;  // the same on every rank
  // End of the last round in which a member announced something.
  std::chrono::steady_clock::time_point last_busy_{};
  std::map<int, StallInspector> stall_inspectors_;  // by set id
  std::string fatal_;                               // a stall past the shutdown time
  std::atomic<bool> fatal_set_{false};              // fatal_ is not empty

  // ---- deadlock report: the handles API threads wait on (how many threads
  // each), and since when the rank has had one (deadlock.h)
  std::mutex wait_mu_;
  std::unordered_map<const HandleState*, int> waited_;
  std::chrono::steady_clock::time_point blocked_since_;
  DeadlockVerdict deadlock_candidate_;  // the last round's (bg thread)

  // ---- stopping and failure
  std::atomic<bool> stop_{false};
  std::mutex stop_mu_;
  mutable std::mutex broken_mu_;
  tandem_result_t broken_code_ = TANDEM_SUCCESS;
  std::string broken_message_;

  // ---- the straggler report (straggler_report.cc; the bg thread, but
  // for the last report, read by API threads under straggler_mu_)
  const RankPlace place_;
  RoundWaits round_waits_;
  std::chrono::steady_clock::time_point period_start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_ran_ =
      std::chrono::steady_clock::now();    // end of the last round that ran something
  std::vector<Summary> straggler_totals_;  // by global rank
  mutable std::mutex straggler_mu_;
  uint64_t straggler_reports_ = 0;
  std::string straggler_json_;

  // ---- autotune (autotune_apply.cc; the bg thread, but for the record of
  // what was applied, read by API threads under autotune_mu_)
  TunedValues tuned_;                                      // what the cycles run with now
  std::unique_ptr<Autotuner> autotuner_;                   // rank 0, with TANDEM_AUTOTUNE
  std::optional<CycleMessage::Tuning> to_send_;            // rank 0: for the next round
  mutable std::mutex autotune_mu_;                         // a leaf
  bool autotune_settled_ = false;                          // under autotune_mu_
  std::vector<std::pair<uint64_t, TunedValues>> applied_;  // (cycle, values), under autotune_mu_

  std::thread thread_;
};

}  // namespace tandem::runtime
