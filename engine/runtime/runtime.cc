#include "runtime/runtime.h"

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>

#include <cstdio>

#include "common/errors.h"

namespace tandem::runtime {
Runtime::Runtime(int rank, int size, std::unique_ptr<DataPathFactory> factory, Settings settings,
                 LogTap log_tap, std::unique_ptr<DevicePath> device, RankPlace place)
    : rank_(rank),
      size_(size),
      settings_(std::move(settings)),
      log_tap_(std::move(log_tap)),
      factory_(std::move(factory)),
      device_(std::move(device)),
      sets_(size_, *factory_, settings_.cache_capacity),
      world_(&sets_.global()->data_path()),
      place_(std::move(place)) {
  tuned_.fusion_threshold_bytes = settings_.fusion_threshold_bytes;
  tuned_.cycle_time_ms = settings_.cycle_time_ms;
  tuned_.cache_enabled = settings_.cache_capacity > 0;
  if (autotune_on() && rank_ == 0) {
    AutotuneConfig c;
    c.warmup_samples = settings_.autotune_warmup_samples;
    c.steps_per_sample = settings_.autotune_steps_per_sample;
    c.max_samples = settings_.autotune_max_samples;
    c.noise = settings_.autotune_noise;
    c.fusion_fixed = settings_.fusion_threshold_set;
    c.cycle_fixed = settings_.cycle_time_set;
    // A cache the user sized is theirs; one of no entries cannot be turned on.
    c.cache_fixed = settings_.cache_capacity_set || settings_.cache_capacity == 0;
    c.log_path = settings_.autotune_log;
    autotuner_ = std::make_unique<Autotuner>(c, tuned_, std::chrono::steady_clock::now());
  }
  if (rank_ == 0 && !settings_.timeline_path.empty())
    timeline_.start(settings_.timeline_path, settings_.timeline_mark_cycles);
  log_setup();
  thread_ = std::thread([this] { loop(); });
}

// TANDEM_LOG=info: how this runtime runs (one line per rank).
void Runtime::log_setup() {
  if (!log_tap_ && !log::enabled(log::Level::kInfo, log::Subsys::runtime)) return;
  char text[512];
  std::snprintf(text, sizeof text,
                "fusing allreduces up to %zu bytes, batching window %g ms, response cache of "
                "%zu entries per process set, idle ranks %s, %s scheduling%s",
                settings_.fusion_threshold_bytes, settings_.cycle_time_ms, settings_.cache_capacity,
                world_->can_wake_members() ? "sleep until a peer asks for a round"
                                           : "poll every TANDEM_IDLE_WAIT",
                settings_.batch_scheduling ? "SCHED_BATCH" : "SCHED_OTHER",
                settings_.timeline_path.empty() || rank_ != 0
                    ? ""
                    : ("; timeline to " + settings_.timeline_path).c_str());
  report(log::Level::kInfo, text, __LINE__);
}

void Runtime::stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  stop_ = true;
  wake();
  if (thread_.joinable()) thread_.join();
  fail_all(TANDEM_ERR_ABORTED, "the tandem runtime was shut down (tandem_finalize)");
  timeline_.stop();
}

Runtime::~Runtime() { stop(); }

void Runtime::report(log::Level level, const std::string& message, int line) const {
  if (log_tap_) log_tap_(level, message);
  else if (log::enabled(level, log::Subsys::runtime))
    log::write_string(level, log::Subsys::runtime, __FILE__, line, message);
}

// After a failure every call fails: with the failure's own error when it is
// a state of the job (a lost peer, a timeout), else with AbortedError and
// its message (ErrorKind::lasting, common/errors.h, says why).
void Runtime::throw_if_broken() const {
  std::lock_guard<std::mutex> lock(broken_mu_);
  if (broken_code_ != TANDEM_SUCCESS) throw_after_failure(broken_code_, broken_message_);
}

void Runtime::loop() {
  pthread_setname_np(pthread_self(), "tandem-runtime");
  // The batching window sleeps for tens of µs; the default timer slack
  // (50 µs) would more than double that.
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  // SCHED_OTHER by default: where this thread shares a core with the
  // framework (one core per rank), its wake-up must preempt the framework's
  // compute so that a step's negotiation and allreduces run while backward
  // still produces gradients; under SCHED_BATCH the peers waited for this
  // rank's time slice every step, which slowed real torch and TF training
  // with bound ranks (docs/runtime.md). SCHED_BATCH
  // (TANDEM_RUNTIME_SCHEDULING=batch) only helps enqueues that come back to
  // back with no compute between them.
  // Failure (a seccomp filter, say) keeps the default. Device batches run
  // under the default policy either way (DefaultScheduling below).
  if (settings_.batch_scheduling) {
    sched_param batch{};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &batch);
  }
  try {
    for (;;) {
      if (!wait_for_work()) {
        check_stalls();
        continue;
      }
      if (!cycle_all()) break;
    }
  } catch (const std::exception& e) {
    report(log::Level::kError, e.what(), __LINE__);
    fail_all(code_of(e), e.what());
  }
}

void Runtime::fail_all(tandem_result_t code, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(broken_mu_);
    if (broken_code_ == TANDEM_SUCCESS) {
      broken_code_ = code;
      broken_message_ = message;
    }
  }
  if (device_) device_->abort(message);
  for (const auto& set : sets_.snapshot()) {
    ProcessSet::Pending pending;
    {
      std::lock_guard<std::mutex> lock(set->mu);
      pending.swap(set->pending);
      set->fresh.clear();
    }
    for (auto& [name, e] : pending) e.handle->complete_one(e.index, code, message);
  }
  std::shared_ptr<HandleState> join;
  {
    std::lock_guard<std::mutex> lock(join_mu_);
    join.swap(join_handle_);
  }
  if (join) join->complete_one(0, code, message);
}

}  // namespace tandem::runtime
