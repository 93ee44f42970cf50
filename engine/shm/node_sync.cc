#include "shm/node_sync.h"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/errors.h"
#include "shm/futex.h"

namespace tandem {
namespace {

using Clock = std::chrono::steady_clock;

// How often a sleeping waiter wakes up to look at its peers' pidfds.
constexpr auto kLivenessSlice = std::chrono::milliseconds(10);
// Looks at the peers' lines before a wait starts its clock (a few cycles
// each while no peer writes: well under a microsecond in all).
constexpr int kQuickPolls = 256;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Writes the CPUs this thread may run on into `out` (all ones when the
// kernel will not say: then the ranks count as having every CPU).
void publish_affinity(std::atomic<uint64_t>* out) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const bool known = sched_getaffinity(0, sizeof set, &set) == 0;
  for (int w = 0; w < kCpuWords; ++w) {
    uint64_t bits = known ? 0 : ~uint64_t{0};
    for (int b = 0; known && b < 64; ++b)
      if (CPU_ISSET(w * 64 + b, &set)) bits |= uint64_t{1} << b;
    out[w].store(bits);
  }
}

uint64_t thread_cpu_ns() {
  struct timespec ts {};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  errno = ENOSYS;
  return -1;
#endif
}

}  // namespace

NodeSync::NodeSync(ControlBlock* control, int local_rank, std::vector<int> world_ranks,
                   std::chrono::milliseconds timeout, int spin_us)
    : control_(control),
      me_(local_rank),
      n_(static_cast<int>(world_ranks.size())),
      world_ranks_(std::move(world_ranks)),
      timeout_(timeout),
      spin_us_(spin_us),
      polling_(n_ > 1 ? Polling::kYield : Polling::kSpin),  // until watch_peers
      pidfds_(n_, -1) {
  epoch_ = control_->ranks[me_].epoch.load();
  control_->ranks[me_].pid.store(getpid());
  publish_affinity(control_->ranks[me_].cpus);
}

NodeSync::~NodeSync() {
  for (int fd : pidfds_)
    if (fd >= 0) close(fd);
}

void NodeSync::watch_peers() {
  int cpus = 0;
  bool shared = false;
  for (int w = 0; w < kCpuWords; ++w) {
    uint64_t any = 0;
    for (int r = 0; r < n_; ++r) {
      const uint64_t mine = control_->ranks[r].cpus[w].load();
      shared = shared || (any & mine) != 0;
      any |= mine;
    }
    cpus += __builtin_popcountll(any);
  }
  polling_ = n_ > cpus ? Polling::kYield : shared ? Polling::kSpinThenYield : Polling::kSpin;
  const pid_t self = getpid();
  for (int r = 0; r < n_; ++r) {
    const pid_t pid = control_->ranks[r].pid.load();
    if (pid == self || pid <= 0) continue;
    // Without pidfds (old kernel, seccomp) check_peers falls back to kill(pid, 0).
    pidfds_[r] = open_pidfd(pid);
  }
}

// The arrival is a plain release store: no fence here, so that taking our
// line back from the peers that read it (the store) overlaps with fetching
// theirs (the wait). The fence a sleeper needs (it bumps `sleepers`, then
// reads our epoch; we store our epoch, then read `sleepers`) comes after the
// wait, in wake_sleepers: whoever arrives last passes its wait without
// sleeping and wakes the rest, and every sleeper re-checks each 10 ms anyway.
void NodeSync::arrive() { control_->ranks[me_].epoch.store(++epoch_, std::memory_order_release); }

void NodeSync::wake_sleepers() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (control_->sleepers.load(std::memory_order_relaxed) > 0) wake_all();
}

void NodeSync::wake_all() {
  control_->wake.fetch_add(1, std::memory_order_seq_cst);
  futex_wake(&control_->wake);
}

bool NodeSync::all_arrived(uint64_t target) const {
  for (int r = 0; r < n_; ++r)
    if (control_->ranks[r].epoch.load(std::memory_order_acquire) < target) return false;
  return true;
}

std::string NodeSync::missing(uint64_t target) const {
  std::string out;
  for (int r = 0; r < n_; ++r)
    if (control_->ranks[r].epoch.load() < target)
      out += (out.empty() ? "" : ", ") + std::to_string(world_ranks_[r]);
  return out;
}

void NodeSync::check_aborted() const {
  if (control_->abort_state.load(std::memory_order_acquire) != 2) return;
  const std::string msg(control_->abort_message);
  switch (static_cast<AbortKind>(control_->abort_kind)) {
    case AbortKind::kPeerLost: throw PeerLostError(msg);
    case AbortKind::kTimeout: throw TimeoutError(msg);
    default: throw AbortedError(msg);
  }
}

void NodeSync::abort(AbortKind kind, const std::string& message) {
  uint32_t expected = 0;
  if (control_->abort_state.compare_exchange_strong(expected, 1)) {
    control_->abort_kind = static_cast<uint32_t>(kind);
    std::strncpy(control_->abort_message, message.c_str(), sizeof control_->abort_message - 1);
    control_->abort_message[sizeof control_->abort_message - 1] = '\0';
    control_->abort_state.store(2, std::memory_order_release);
  }
  wake_all();
}

void NodeSync::peer_died(const char* what, int r) {
  abort(AbortKind::kPeerLost,
        std::string(what) + ": rank " + std::to_string(world_ranks_[r]) + " (pid " +
            std::to_string(control_->ranks[r].pid.load()) +
            ", same node) died during the collective; the job cannot continue, restart it");
  check_aborted();
  throw PeerLostError(what);  // not reached: check_aborted throws the record
}

void NodeSync::check_alive(const char* what) {
  struct pollfd p[kMaxLocalRanks];
  int idx[kMaxLocalRanks];
  int m = 0;
  for (int r = 0; r < n_; ++r) {
    if (pidfds_[r] >= 0) {
      p[m] = {pidfds_[r], POLLIN, 0};
      idx[m++] = r;
    } else if (r != me_) {
      const pid_t pid = control_->ranks[r].pid.load();
      if (pid > 0 && pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH) peer_died(what, r);
    }
  }
  if (m == 0 || poll(p, static_cast<nfds_t>(m), 0) <= 0) return;
  for (int i = 0; i < m; ++i)
    if (p[i].revents) peer_died(what, idx[i]);
}

void NodeSync::check_peers(const char* what, uint64_t target) {
  for (int r = 0; r < n_; ++r) {
    if (r == me_ || control_->ranks[r].epoch.load() >= target) continue;
    const pid_t pid = control_->ranks[r].pid.load();
    bool dead = false;
    if (pidfds_[r] >= 0) {
      struct pollfd p = {pidfds_[r], POLLIN, 0};
      dead = poll(&p, 1, 0) > 0;
    } else if (pid > 0 && pid != getpid()) {
      dead = kill(pid, 0) != 0 && errno == ESRCH;
    }
    if (dead) peer_died(what, r);
  }
}

void NodeSync::wait(const char* what) {
  const uint64_t target = epoch_;
  ++stats_.waits;
  if (all_arrived(target)) {
    ++stats_.ready;
    return;
  }
  // A peer on its own CPU usually arrives within a few hundred ns: poll
  // first with neither the clock (a vDSO call per look is a visible share
  // of an 8-byte allreduce) nor pause (~140 cycles on Skylake-SP, a long
  // time next to one line's transfer).
  if (polling_ != Polling::kYield) {
    for (int i = 0; i < kQuickPolls; ++i) {
      if (all_arrived(target)) {
        ++stats_.spun;
        return;
      }
    }
  }
  const auto start = Clock::now();
  struct Account {
    WaitStats& s;
    Clock::time_point t0;
    bool cpu;
    uint64_t cpu0 = cpu ? thread_cpu_ns() : 0;
    ~Account() {
      s.wait_ns += static_cast<uint64_t>((Clock::now() - t0).count());
      if (cpu) s.wait_cpu_ns += thread_cpu_ns() - cpu0;
    }
  } account{stats_, start, measure_cpu_};
  const auto deadline = start + timeout_;
  // How long to spin with the pause instruction, then to poll with
  // sched_yield between looks, before sleeping on the futex (spin_us in
  // all). Yielding is for a peer that needs our CPU: more local ranks than
  // CPUs, or ranks free to meet on one CPU, where a long pure spin starves
  // the peer that shares our CPU and a short spin with yields lets it run.
  // Where no rank can need our CPU it only hands it to someone else: the
  // kernel (EEVDF) moves a yielding thread's deadline a whole slice back,
  // so next to any busy thread a yield costs milliseconds, and bound ranks
  // beside busy loops are far faster spinning than yielding. Sleeping too
  // early is as bad: waking from a futex takes tens of microseconds, and
  // two ranks that keep waking each other settle at that latency per
  // barrier. The measurements of each case: docs/engine.md, "Waiting".
  const auto spin_for = polling_ == Polling::kSpin            ? spin_us_
                        : polling_ == Polling::kSpinThenYield ? std::min(spin_us_, 1)
                                                              : 0;
  const auto spin_end = start + std::chrono::microseconds(spin_for);
  const auto yield_end = start + std::chrono::microseconds(spin_us_);
  if (spin_for > 0) {
    for (int i = 1;; ++i) {
      if (all_arrived(target)) {
        ++stats_.spun;
        return;
      }
      if ((i & 15) == 0 && Clock::now() >= spin_end) break;
      cpu_relax();
    }
  }
  // Every poll of this phase yields: a pause loop here would keep a peer
  // that waits for our CPU off it.
  for (;;) {
    if (all_arrived(target)) {
      ++stats_.yielded;
      return;
    }
    if (Clock::now() >= yield_end) break;
    sched_yield();
    ++stats_.yields;
  }
  ++stats_.slept;
  auto next_check = Clock::now();
  for (;;) {
    check_aborted();
    const auto now = Clock::now();
    if (now >= next_check) {
      check_peers(what, target);
      next_check = now + kLivenessSlice;
    }
    if (now >= deadline) {
      abort(AbortKind::kTimeout, std::string(what) + ": rank(s) " + missing(target) +
                                     " did not arrive within " +
                                     std::to_string(timeout_.count() / 1000.0).substr(0, 8) +
                                     " s (TANDEM_TIMEOUT); a peer is stopped, hung or far behind");
      check_aborted();
    }
    control_->sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t w = control_->wake.load(std::memory_order_seq_cst);
    if (all_arrived(target)) {
      control_->sleepers.fetch_sub(1);
      return;
    }
    const auto slice = std::min<Clock::duration>(kLivenessSlice, deadline - now);
    ++stats_.sleeps;
    if (control_->abort_state.load() == 0)
      futex_wait(&control_->wake, w, std::chrono::duration_cast<std::chrono::nanoseconds>(slice));
    control_->sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if (all_arrived(target)) return;
  }
}

}  // namespace tandem
