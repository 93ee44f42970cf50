// Shared memory: segment privacy and cleanup, the settings, when waits may
// spin (from the local ranks' CPU sets), and the failure
// tests with forked ranks: a SIGKILLed peer fails every survivor with
// PeerLostError naming it, a SIGSTOPped one with TimeoutError after the
// timeout, on both node-local allreduce algorithms; nobody hangs and
// nothing is left in /dev/shm. Ranks killed during setup (the creator, the
// whole job, with a node per rank) leave nothing either, at the latest once
// the next setup on the node swept their segment. Single copy
// (process_vm_readv/writev) between forked ranks, and its fallback when a
// rank refuses it.
#include <dirent.h>
#include <linux/capability.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/errors.h"
#include "communicator/communicator.h"
#include "fork_world.h"
#include "shm/doorbell.h"
#include "shm/node_sync.h"
#include "shm/shm_group.h"
#include "shm/segment.h"
#include "shm/shm_group.h"
#include "../collectives/thread_world.h"

namespace tandem {
namespace testing {
namespace {

std::vector<std::string> shm_entries(const std::string& needle) {
  std::vector<std::string> out;
  DIR* d = opendir("/dev/shm");
  if (!d) return out;
  while (dirent* e = readdir(d))
    if (std::string(e->d_name).find(needle) != std::string::npos) out.push_back(e->d_name);
  closedir(d);
  return out;
}

TEST(Segment, PrivateAndUnlinked) {
  const std::string name = make_segment_name("job 7/x");
  EXPECT_EQ(name.rfind("/tandem-job_7_x-", 0), 0u) << name;
  EXPECT_NE(make_segment_name("job"), make_segment_name("job")) << "names carry a random part";
  {
    SharedSegment s = SharedSegment::create(name, 1 << 16, 4096);
    struct stat st {};
    ASSERT_EQ(stat(("/dev/shm" + name).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_THROW(SharedSegment::create(name, 1 << 16, 0), SystemError) << "O_EXCL";
    SharedSegment o = SharedSegment::open(name, 1 << 16);
    o.base()[100] = 42;
    EXPECT_EQ(s.base()[100], 42);
    EXPECT_THROW(SharedSegment::open(name, 1 << 17), BootstrapError) << "size mismatch";
  }
  EXPECT_TRUE(shm_entries(name.substr(1)).empty()) << "creator unlinks on destruction";
}

TEST(Segment, CommunicatorLeavesNothingInDevShm) {
  auto world = std::make_shared<MemoryWorld>(3);
  const std::string job = world->identity_of(0).job_id;
  std::vector<std::thread> ts;
  std::atomic<int> seen_while_alive{-1};
  std::atomic<int> built{0};
  for (int r = 0; r < 3; ++r)
    ts.emplace_back([&, r] {
      Communicator c(std::make_unique<MemoryBootstrap>(world, r), nullptr, small_options());
      built.fetch_add(1);
      c.barrier();
      if (r == 0) seen_while_alive = static_cast<int>(shm_entries(job).size());
      c.barrier();
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(seen_while_alive.load(), 0) << "the segment must be unlinked once every rank mapped it";
}

// The doorbell: a request for round k wakes the ranks that have run fewer
// rounds, and only those; a rank's own poke ends its wait with ready() true;
// the deadline ends it otherwise. request() says whether it raised the
// node's round (that rank forwards it to other nodes); relay(), a request
// from another node, wakes every local rank, the relaying one too.
TEST(Doorbell, RequestWakesPeersPokeWakesSelf) {
  run_world(3, {}, [](Communicator& c) {
    Doorbell* bell = &c.doorbell();
    const auto far = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    c.barrier();
    if (c.identity().rank == 1) { EXPECT_TRUE(bell->request(1)); }
    EXPECT_TRUE(bell->wait(0, far, [] { return false; }));  // woken, or already asked
    EXPECT_EQ(bell->requested(), 1u);
    c.barrier();
    // Nobody asks for round 2: the wait ends at its deadline.
    EXPECT_FALSE(bell->wait(1, std::chrono::steady_clock::now() + std::chrono::milliseconds(30),
                            [] { return false; }));
    // Own work: another thread of this rank sets the flag and pokes.
    std::atomic<bool> work{false};
    std::thread t([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      work = true;
      bell->poke();
    });
    EXPECT_FALSE(bell->wait(1, far, [&] { return work.load(); }));
    EXPECT_TRUE(work.load());
    t.join();
    c.barrier();
    // Requests only grow: an older request does not lower the round.
    if (c.identity().rank == 0) { EXPECT_TRUE(bell->request(3)); }
    c.barrier();
    if (c.identity().rank == 2) { EXPECT_FALSE(bell->request(2)); }
    c.barrier();
    EXPECT_EQ(bell->requested(), 3u);
    c.barrier();
    // A relayed request wakes everyone, the relaying rank's own waiter too.
    std::thread relayer;
    if (c.identity().rank == 0)
      relayer = std::thread([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        bell->relay(4);
      });
    EXPECT_TRUE(bell->wait(3, far, [] { return false; }));
    if (relayer.joinable()) relayer.join();
    EXPECT_EQ(bell->requested(), 4u);
  });
}

// Forked ranks, each bound to the CPUs `plan[rank]` names (empty: left
// unbound), meet on one control block and pass 300 barriers; returns how
// each decided to poll (NodeSync::Polling as an int, -1: failed), and how
// its waits went.
struct Observed {
  int polling = -1;
  unsigned long long spun = 0, yields = 0;
};

std::vector<Observed> observe(const std::vector<std::vector<int>>& plan) {
  const int n = static_cast<int>(plan.size());
  void* mem = mmap(nullptr, sizeof(ControlBlock), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw SystemError("mmap control block", errno);
  auto* control = static_cast<ControlBlock*>(mem);
  ForkArea* area = make_fork_area();
  std::vector<int> world(n);
  for (int r = 0; r < n; ++r) world[r] = r;
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      int outcome = -1;
      try {
        if (!plan[r].empty()) {
          cpu_set_t set;
          CPU_ZERO(&set);
          for (int cpu : plan[r]) CPU_SET(cpu, &set);
          if (sched_setaffinity(0, sizeof set, &set) != 0)
            throw SystemError("sched_setaffinity", errno);
        }
        NodeSync sync(control, r, world, std::chrono::seconds(10), 50);
        ForkBootstrap(area, r, n, "spin").allgather({}, std::chrono::seconds(10));  // all published
        sync.watch_peers();
        for (int i = 0; i < 300; ++i) sync.barrier("test barrier");
        std::snprintf(area->message[r], sizeof area->message[r], "%llu %llu",
                      static_cast<unsigned long long>(sync.stats().spun),
                      static_cast<unsigned long long>(sync.stats().yields));
        outcome = static_cast<int>(sync.polling());
      } catch (const std::exception&) {}
      area->outcome[r] = outcome;
      _exit(0);
    }
    pids.push_back(pid);
  }
  std::vector<Observed> out(n);
  for (int r = 0; r < n; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    out[r].polling = area->outcome[r];
    std::sscanf(area->message[r], "%llu %llu", &out[r].spun, &out[r].yields);
  }
  munmap(area, sizeof(ForkArea));
  munmap(mem, sizeof(ControlBlock));
  return out;
}

std::vector<int> polling_of(const std::vector<std::vector<int>>& plan) {
  std::vector<int> out;
  for (const Observed& o : observe(plan)) {
    out.push_back(o.polling);
    // The waits do what the mode says: a spinning rank never yields, a
    // yielding one never spins (a wait that finds everyone arrived is neither).
    if (o.polling == static_cast<int>(NodeSync::Polling::kSpin)) { EXPECT_EQ(o.yields, 0u); }
    if (o.polling == static_cast<int>(NodeSync::Polling::kYield)) { EXPECT_EQ(o.spun, 0u); }
  }
  return out;
}

// The CPUs this test may use (it may itself run bound).
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {0};
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

std::vector<int> all(int n, NodeSync::Polling p) {
  return std::vector<int>(n, static_cast<int>(p));
}

// Bound ranks (srun --horovod=on, tandem-run --bind) each see one core in
// their own affinity; what decides is every rank's set. Spinning with two
// ranks on one CPU keeps the peer off it; yielding where no rank can need
// our CPU hands it to other work for a whole scheduler slice, which makes
// an 8-byte allreduce many times slower beside a busy loop (docs/engine.md,
// "Waiting").
TEST(NodeSync, PollingFollowsTheRanksCpuSets) {
  using P = NodeSync::Polling;
  const std::vector<int> cpus = allowed_cpus();
  const int a = cpus[0];
  EXPECT_EQ(polling_of({{a}, {a}}), all(2, P::kYield));
  EXPECT_EQ(polling_of({{a}}), all(1, P::kSpin));
  const int host = static_cast<int>(cpus.size());
  EXPECT_EQ(polling_of(std::vector<std::vector<int>>(host + 1, std::vector<int>{})),
            all(host + 1, P::kYield));
  if (host < 2) GTEST_SKIP() << "one CPU here: the two-CPU cases need two";
  const int b = cpus[1];
  EXPECT_EQ(polling_of({{a}, {b}}), all(2, P::kSpin));
  EXPECT_EQ(polling_of({{a}, {b}, {a}, {b}}), all(4, P::kYield));
  EXPECT_EQ(polling_of({{a, b}, {a, b}}), all(2, P::kSpinThenYield));
  EXPECT_EQ(polling_of({{a, b}, {b}}), all(2, P::kSpinThenYield));
  EXPECT_EQ(polling_of({{a}, {a}, {b}}), all(3, P::kYield));
  EXPECT_EQ(polling_of(std::vector<std::vector<int>>(host, std::vector<int>{})),
            all(host, P::kSpinThenYield));
}

TEST(Settings, StrictParsing) {
  struct Case {
    const char* var;
    const char* value;
    bool ok;
  };
  const Case cases[] = {
      {"TANDEM_TIMEOUT", "soon", false},
      {"TANDEM_TIMEOUT", "0.25", true},
      {"TANDEM_TIMEOUT", "-1", false},
      {"TANDEM_SHM_CHUNK_BYTES", "4K", false},
      {"TANDEM_SHM_CHUNK_BYTES", "1024", false},
      {"TANDEM_SHM_CHUNK_BYTES", "8192", true},
      {"TANDEM_SHM_ARENA_BYTES", "-5", false},
      {"TANDEM_SHM_ARENA_BYTES", "0", true},
      {"TANDEM_SHM_SPIN_US", "20us", false},
      {"TANDEM_SHM_SPIN_US", "0", true},
      {"TANDEM_SHM_MAX_CHUNK_BYTES", "4M", false},
      {"TANDEM_SHM_MAX_CHUNK_BYTES", "100", false},
      {"TANDEM_SHM_MAX_CHUNK_BYTES", "8192", true},
  };
  for (const auto& c : cases) {
    setenv(c.var, c.value, 1);
    if (c.ok) {
      EXPECT_NO_THROW(CommunicatorOptions::from_environment()) << c.var << "=" << c.value;
    } else {
      try {
        CommunicatorOptions::from_environment();
        ADD_FAILURE() << c.var << "=" << c.value << " was accepted";
      } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find(c.var), std::string::npos) << e.what();
      }
    }
    unsetenv(c.var);
  }
  EXPECT_EQ(CommunicatorOptions::from_environment().shm_max_chunk_bytes, 4u << 20);
  setenv("TANDEM_SHM_CHUNK_BYTES", "8192", 1);
  setenv("TANDEM_SHM_MAX_CHUNK_BYTES", "65536", 1);
  setenv("TANDEM_TIMEOUT", "0.25", 1);
  const auto o = CommunicatorOptions::from_environment();
  EXPECT_EQ(o.shm_chunk_bytes, 8192u);
  EXPECT_EQ(o.shm_max_chunk_bytes, 65536u);
  EXPECT_EQ(o.timeout.count(), 250);
  unsetenv("TANDEM_SHM_CHUNK_BYTES");
  unsetenv("TANDEM_SHM_MAX_CHUNK_BYTES");
  unsetenv("TANDEM_TIMEOUT");
}

// --------------------------------------------------------- forked failures

enum Outcome { kNone = 0, kPeerLost = 1, kTimeout = 2, kOther = 3, kOk = 4 };

// A rank: join, report ready, then allreduce 4 MiB until something fails
// (path: CommunicatorOptions::shm_allreduce_path).
[[noreturn]] void rank_main(ForkArea* area, int rank, int size, const std::string& job,
                            std::chrono::milliseconds timeout, int path) {
  int outcome = kOther;
  std::string msg;
  try {
    CommunicatorOptions o = small_options();
    o.timeout = timeout;
    o.shm_chunk_bytes = 64 << 10;
    o.shm_allreduce_path = path;
    Communicator c(std::make_unique<ForkBootstrap>(area, rank, size, job), nullptr, o);
    std::vector<float> buf(1 << 20, 1.0f);
    area->ready[rank] = 1;
    for (;;) c.allreduce(buf.data(), buf.data(), buf.size(), TANDEM_FLOAT32, TANDEM_MAX);
  } catch (const PeerLostError& e) {
    outcome = kPeerLost;
    msg = e.what();
  } catch (const TimeoutError& e) {
    outcome = kTimeout;
    msg = e.what();
  } catch (const std::exception& e) { msg = e.what(); }
  std::strncpy(area->message[rank], msg.c_str(), sizeof area->message[rank] - 1);
  area->outcome[rank] = outcome;
  _exit(0);
}

struct ForkRun {
  int size;
  std::vector<pid_t> pids;
  ForkArea* area;
  std::string job;
};

ForkRun start(int size, std::chrono::milliseconds timeout, int path = 0) {
  static int counter = 0;
  ForkRun run{size,
              {},
              make_fork_area(),
              "forktest" + std::to_string(getpid()) + "-" + std::to_string(counter++)};
  for (int r = 0; r < size; ++r) {
    const pid_t pid = fork();
    if (pid == 0) rank_main(run.area, r, size, run.job, timeout, path);
    run.pids.push_back(pid);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int r = 0; r < size; ++r)
    while (!run.area->ready[r] && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // Let them get well into the allreduce loop.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return run;
}

// Waits for every rank but the victim; any still running after `limit` is a
// hang: killed and reported.
void reap_survivors(ForkRun& run, int victim, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (int r = 0; r < run.size; ++r) {
    if (r == victim) continue;
    int status = 0;
    while (waitpid(run.pids[r], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "rank " << r << " still hangs " << limit.count()
                      << " s after the peer failed";
        kill(run.pids[r], SIGKILL);
        waitpid(run.pids[r], &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

// Both node-local allreduce algorithms: staged (every wait is a barrier)
// and direct (survivors may be reading or writing the victim's memory).
class ShmFailure : public ::testing::TestWithParam<int> {};

TEST_P(ShmFailure, KilledPeerFailsEverySurvivorWithPeerLost) {
  // The timeout is far beyond the reaping limit: only the liveness check
  // can end the survivors' waits in time.
  ForkRun run = start(4, std::chrono::seconds(120), GetParam());
  const int victim = 2;
  ASSERT_EQ(kill(run.pids[victim], SIGKILL), 0);
  int status = 0;
  waitpid(run.pids[victim], &status, 0);
  reap_survivors(run, victim, std::chrono::seconds(60));
  for (int r = 0; r < run.size; ++r) {
    if (r == victim) continue;
    EXPECT_EQ(run.area->outcome[r].load(), kPeerLost)
        << "rank " << r << ": " << run.area->message[r];
    EXPECT_NE(std::string(run.area->message[r]).find("rank 2"), std::string::npos)
        << run.area->message[r];
  }
  EXPECT_TRUE(shm_entries(run.job).empty());
  munmap(run.area, sizeof(ForkArea));
}

TEST_P(ShmFailure, StoppedPeerFailsEverySurvivorWithTimeout) {
  ForkRun run = start(3, std::chrono::milliseconds(1500), GetParam());
  const int victim = 1;
  ASSERT_EQ(kill(run.pids[victim], SIGSTOP), 0);
  reap_survivors(run, victim, std::chrono::seconds(60));
  kill(run.pids[victim], SIGKILL);
  int status = 0;
  waitpid(run.pids[victim], &status, 0);
  for (int r = 0; r < run.size; ++r) {
    if (r == victim) continue;
    EXPECT_EQ(run.area->outcome[r].load(), kTimeout)
        << "rank " << r << ": " << run.area->message[r];
    EXPECT_NE(std::string(run.area->message[r]).find("rank(s) 1 "), std::string::npos)
        << run.area->message[r];
  }
  EXPECT_TRUE(shm_entries(run.job).empty());
  munmap(run.area, sizeof(ForkArea));
}

INSTANTIATE_TEST_SUITE_P(Paths, ShmFailure, ::testing::Values(1, 2),
                         [](const auto& info) { return info.param == 1 ? "staged" : "direct"; });

// --------------------------------------------------- crashes during setup

// A point in the shared-memory setup, by bootstrap exchange: the setup's
// first allgather agrees on the sizes (1), then local rank 0 creates the
// segment and shares its name (2), every other rank opens it, and a barrier
// (3) precedes the end of setup. A crash kills `rank` with SIGKILL on
// entering exchange `round`, or on leaving it (`after`).
struct Crash {
  int rank;
  int round;
  bool after;
};

// ForkBootstrap that dies where the crashes say; with `node_per_rank` every
// rank is its own node (tandem-run --node-per-rank: a segment per rank).
class CrashingBootstrap : public Bootstrap {
 public:
  CrashingBootstrap(ForkArea* area, int rank, int size, const std::string& job,
                    std::vector<Crash> crashes, bool node_per_rank)
      : inner_(area, rank, size, job), id_(inner_.identity()), crashes_(std::move(crashes)) {
    if (node_per_rank) {
      id_.local_rank = 0;
      id_.local_size = 1;
      id_.cross_rank = rank;
      id_.cross_size = size;
      for (int r = 0; r < size; ++r) id_.node_of_rank[r] = r;
    }
  }
  const Identity& identity() const override { return id_; }
  std::vector<Bytes> allgather(const Bytes& mine, std::chrono::milliseconds timeout) override {
    ++round_;
    die_if(false);
    auto all = inner_.allgather(mine, timeout);
    die_if(true);
    return all;
  }

 private:
  void die_if(bool after) const {
    for (const Crash& c : crashes_)
      if (c.rank == id_.rank && c.round == round_ && c.after == after) raise(SIGKILL);
  }
  ForkBootstrap inner_;
  Identity id_;
  std::vector<Crash> crashes_;
  int round_ = 0;
};

ShmOptions tiny_shm() {
  ShmOptions o;
  o.timeout = std::chrono::milliseconds(1500);  // survivors give up on the dead this soon
  o.chunk_bytes = o.max_chunk_bytes = 4096;
  o.arena_bytes = 1 << 16;
  o.cma = 0;  // no single-copy probe: setup is the bootstrap exchanges and the segment
  return o;
}

// Forks `size` ranks that set up a ShmGroup and crash as told; returns once
// every rank has died or failed. The survivors' errors are not the point.
void crash_during_setup(int size, const std::string& job, const std::vector<Crash>& crashes,
                        bool node_per_rank) {
  ForkArea* area = make_fork_area();
  std::vector<pid_t> pids;
  for (int r = 0; r < size; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      try {
        CrashingBootstrap b(area, r, size, job, crashes, node_per_rank);
        ShmGroup g(b, tiny_shm());
      } catch (const std::exception&) {}
      _exit(0);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);  // reaped: a zombie's pid still counts as alive
  }
  munmap(area, sizeof(ForkArea));
}

// The next job's setup on this node (its own segment, one rank).
void next_setup() {
  ForkArea* area = make_fork_area();
  ForkBootstrap b(area, 0, 1, "next" + std::to_string(getpid()));
  ShmGroup g(b, tiny_shm());
  munmap(area, sizeof(ForkArea));
}

struct SetupCrashCase {
  const char* label;
  int size;
  bool node_per_rank;
  std::vector<Crash> crashes;
  bool left_for_the_next_setup;  // no living process knows the name
};

void PrintTo(const SetupCrashCase& c, std::ostream* os) { *os << c.label; }

class SetupCrash : public ::testing::TestWithParam<SetupCrashCase> {};

TEST_P(SetupCrash, LeavesNothingInDevShm) {
  static int counter = 0;
  const SetupCrashCase& c = GetParam();
  const std::string job = "setupcrash" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  crash_during_setup(c.size, job, c.crashes, c.node_per_rank);
  // Where a survivor or the last opener removes the name, it is gone now.
  // (Where only the next setup can, it may be gone too: any setup on this
  // machine, another test's running beside this one, sweeps.)
  if (!c.left_for_the_next_setup) {
    EXPECT_TRUE(shm_entries(job).empty()) << c.label << ": left " << shm_entries(job).size();
  }
  next_setup();
  EXPECT_TRUE(shm_entries(job).empty())
      << c.label << ": the next setup left " << shm_entries(job).size();
}

INSTANTIATE_TEST_SUITE_P(
    Points, SetupCrash,
    ::testing::Values(
        // Local rank 0 dies between creating the segment and sharing its
        // name, the others live on: nobody alive knows the name.
        SetupCrashCase{"creator_before_sharing", 3, false, {{0, 2, false}}, true},
        // The whole job killed there (srun or tandem-run ending every task).
        SetupCrashCase{
            "job_before_opening", 3, false, {{0, 2, false}, {1, 2, false}, {2, 2, false}}, true},
        // The job killed once the name is out but before rank 2 opened it.
        SetupCrashCase{
            "job_after_sharing", 3, false, {{0, 3, false}, {1, 3, false}, {2, 2, true}}, true},
        // Every rank opened it, then local rank 0 died: the last opener
        // already removed the name.
        SetupCrashCase{"creator_after_all_opened", 3, false, {{0, 3, false}}, false},
        // Local rank 0 and rank 2 die before rank 2 opened it: rank 1,
        // the survivor that opened it, removes it as it fails.
        SetupCrashCase{"survivor_removes", 3, false, {{0, 3, false}, {2, 2, true}}, false},
        // A node per rank (tandem-run --node-per-rank, the TCP transport's
        // scale runs): nobody else opens a rank's segment, so it has no name
        // by the time anything can kill the rank.
        SetupCrashCase{
            "node_per_rank", 3, true, {{0, 3, false}, {1, 3, false}, {2, 2, true}}, false}),
    [](const auto& info) { return std::string(info.param.label); });

// The sweep itself, in a folder of its own (every setup sweeps /dev/shm,
// other tests' too): only names of this form, of this PID namespace, whose
// creator is gone, of this user.
TEST(Segment, StaleSweepTakesOnlyDeadCreatorsSegments) {
  char dir_template[] = "/tmp/tandem-sweep-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  // make_segment_name's form for this process; the same with the dead
  // child's pid, with another PID namespace, and without the creator.
  const std::string live = make_segment_name("job").substr(1);
  const std::string me = "-p" + std::to_string(getpid()) + "-";
  std::string dead = live;
  dead.replace(dead.find(me), me.size(), "-p" + std::to_string(child) + "-");
  const std::string other_ns = dead.substr(0, dead.rfind("-n")) + "-n1";
  const std::string old_form = "tandem-job-0123456789abcdef";
  const std::string not_ours = "other" + dead.substr(std::string("tandem").size());
  for (const std::string& n : {live, dead, other_ns, old_form, not_ours}) {
    FILE* f = std::fopen((dir + "/" + n).c_str(), "w");
    ASSERT_NE(f, nullptr) << n;
    std::fclose(f);
  }
  EXPECT_EQ(remove_stale_segments(dir), std::vector<std::string>{dead});
  std::vector<std::string> left;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') left.push_back(e->d_name);
  closedir(d);
  std::sort(left.begin(), left.end());
  std::vector<std::string> expected{live, other_ns, old_form, not_ours};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(left, expected);
  for (const std::string& n : left) std::remove((dir + "/" + n).c_str());
  rmdir(dir.c_str());
}

// ------------------------------------------- single copy between processes

// Whether this machine lets one process read another's memory
// (process_vm_readv on a forked child; root or not, Yama, seccomp): the
// expectation of the tests below, checked independently of the engine.
bool cma_works_here() {
  static int answer = -1;
  if (answer >= 0) return answer == 1;
  static volatile uint64_t word = 0x5eed;
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    char c = 1;
    (void)!write(fds[1], &c, 1);
    pause();
    _exit(0);
  }
  close(fds[1]);
  char c = 0;
  (void)!read(fds[0], &c, 1);
  close(fds[0]);
  uint64_t seen = 0;
  struct iovec l = {&seen, sizeof seen}, r = {const_cast<uint64_t*>(&word), sizeof seen};
  answer = process_vm_readv(child, &l, 1, &r, 1, 0) == sizeof seen && seen == 0x5eed ? 1 : 0;
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  return answer == 1;
}

// Makes ptrace access (hence process_vm_readv/writev) fail between this
// process and its peers, as Yama or a non-dumpable process would: not
// dumpable, so unprivileged peers may not attach to it, and without
// CAP_SYS_PTRACE, so that as root it may not attach to peers that hold more
// capabilities than it does (root peers could still attach to it).
void refuse_cma() {
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct d[2] = {};
  if (syscall(SYS_capget, &h, d) != 0) return;
  const int bit = CAP_SYS_PTRACE;
  d[bit / 32].effective &= ~(1u << (bit % 32));
  d[bit / 32].permitted &= ~(1u << (bit % 32));
  syscall(SYS_capset, &h, d);
}

// Forked ranks (separate address spaces): every size and both algorithms,
// results checked on every rank and equal bit for bit across ranks; which
// path the node took is reported back. `refuse`: local rank 1 refuses
// single copy, so the node must find out at setup and stage.
struct ForkedResult {
  bool all_ok = true;
  bool single_copy[kForkMaxRanks] = {};
  std::string failure;
};

ForkedResult forked_allreduce(int size, int path, bool refuse, int cma = 2) {
  ForkArea* area = make_fork_area();
  static int counter = 0;
  const std::string job = "cmatest" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  std::vector<pid_t> pids;
  for (int r = 0; r < size; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      int outcome = kOther;
      std::string msg;
      try {
        if (refuse && r == 1) refuse_cma();
        CommunicatorOptions o = small_options();
        o.shm_chunk_bytes = 64 << 10;
        o.shm_allreduce_path = path;
        o.shm_cma = cma;
        Communicator c(std::make_unique<ForkBootstrap>(area, r, size, job), nullptr, o);
        area->ready[r] = c.shm_single_copy() ? 2 : 1;
        for (size_t count : {size_t{1}, size_t{1025}, size_t{40001}, size_t{(1 << 20) + 7}}) {
          std::vector<float> in(count), out(count, -1.0f);
          for (size_t i = 0; i < count; ++i)
            in[i] = static_cast<float>((i * 7 + r * 3) % 97) * 0.25f;
          c.allreduce(in.data(), out.data(), count, TANDEM_FLOAT32, TANDEM_SUM);
          for (size_t i = 0; i < count; ++i) {
            float want = 0;
            for (int k = 0; k < size; ++k) want += static_cast<float>((i * 7 + k * 3) % 97) * 0.25f;
            if (out[i] != want)
              throw Error("count " + std::to_string(count) + " element " + std::to_string(i));
          }
          c.allreduce(in.data(), in.data(), count, TANDEM_FLOAT32, TANDEM_SUM);  // in place
          if (std::memcmp(in.data(), out.data(), count * 4) != 0)
            throw Error("in place differs, count " + std::to_string(count));
          // Every rank checks its bits against rank 0's through a MAX and a MIN.
          std::vector<float> hi(count), lo(count);
          c.allreduce(out.data(), hi.data(), count, TANDEM_FLOAT32, TANDEM_MAX);
          c.allreduce(out.data(), lo.data(), count, TANDEM_FLOAT32, TANDEM_MIN);
          if (std::memcmp(hi.data(), lo.data(), count * 4) != 0)
            throw Error("ranks disagree, count " + std::to_string(count));
        }
        outcome = kOk;
      } catch (const std::exception& e) { msg = e.what(); }
      std::strncpy(area->message[r], msg.c_str(), sizeof area->message[r] - 1);
      area->outcome[r] = outcome;
      _exit(0);
    }
    pids.push_back(pid);
  }
  ForkedResult res;
  for (int r = 0; r < size; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    res.single_copy[r] = area->ready[r] == 2;
    if (area->outcome[r] != kOk) {
      res.all_ok = false;
      res.failure += "rank " + std::to_string(r) + ": " + area->message[r] + "; ";
    }
  }
  munmap(area, sizeof(ForkArea));
  EXPECT_TRUE(shm_entries(job).empty());
  return res;
}

TEST(SingleCopy, ForkedRanksEverySizeBothPaths) {
  for (int size : {2, 3, 4}) {
    for (int path : {0, 1, 2}) {
      const ForkedResult res = forked_allreduce(size, path, false);
      EXPECT_TRUE(res.all_ok) << size << " ranks, path " << path << ": " << res.failure;
      for (int r = 0; r < size; ++r)
        EXPECT_EQ(res.single_copy[r], cma_works_here()) << "rank " << r << " of " << size;
    }
    // Measured (the default): processes time both paths at setup; whatever
    // they find, they agree, and every result is right.
    const ForkedResult res = forked_allreduce(size, 0, false, 1);
    EXPECT_TRUE(res.all_ok) << size << " ranks, measured: " << res.failure;
    for (int r = 1; r < size; ++r)
      EXPECT_EQ(res.single_copy[r], res.single_copy[0]) << "rank " << r;
  }
}

// A rank that refuses ptrace access: every rank learns it at setup and the
// node stages (no error, no partial use), with every result still right.
TEST(SingleCopy, RefusedByOneRankFallsBackOnEveryRank) {
  for (int size : {2, 3}) {
    const ForkedResult res = forked_allreduce(size, 2, true);
    EXPECT_TRUE(res.all_ok) << size << " ranks: " << res.failure;
    for (int r = 0; r < size; ++r)
      EXPECT_FALSE(res.single_copy[r]) << "rank " << r << " of " << size;
  }
}

// TANDEM_SHM_CMA=0 turns single copy off (the staged path's test switch).
TEST(SingleCopy, SettingTurnsItOff) {
  setenv("TANDEM_SHM_CMA", "0", 1);
  EXPECT_FALSE(CommunicatorOptions::from_environment().shm_cma);
  setenv("TANDEM_SHM_CMA", "yes", 1);
  EXPECT_THROW(CommunicatorOptions::from_environment(), InvalidArgument);
  unsetenv("TANDEM_SHM_CMA");
  EXPECT_TRUE(CommunicatorOptions::from_environment().shm_cma);
  setenv("TANDEM_SHM_CMA", "2", 1);
  EXPECT_EQ(CommunicatorOptions::from_environment().shm_cma, 2);
  setenv("TANDEM_SHM_CMA", "3", 1);
  EXPECT_THROW(CommunicatorOptions::from_environment(), InvalidArgument);
  unsetenv("TANDEM_SHM_CMA");
  CommunicatorOptions o = small_options();
  o.shm_cma = 0;
  run_world(
      2, {}, [](Communicator& c) { EXPECT_FALSE(c.shm_single_copy()); }, o);
  o.shm_cma = 2;
  run_world(
      2, {}, [](Communicator& c) { EXPECT_TRUE(c.shm_single_copy()); }, o);
  run_world(1, {}, [](Communicator& c) { EXPECT_FALSE(c.shm_single_copy()) << "nobody to reach"; });
}

// TANDEM_SHM_CMA=1 (the default): every local rank says alike whether
// single copy works (which path each call takes is the node's timed
// choice; path_choice_test.cc checks the calls agree while it changes).
TEST(SingleCopy, EveryLocalRankAgreesWhetherItWorks) {
  for (int size : {2, 3, 4}) {
    std::vector<int> chose(size, -1);
    run_world(size, {}, [&](Communicator& c) {
      chose[c.identity().rank] = c.shm_single_copy() ? 1 : 0;
      float x[3] = {1, 2, 3};
      c.allreduce(x, x, 3, TANDEM_FLOAT32, TANDEM_SUM);
      EXPECT_EQ(x[2], 3.0f * size);
    });
    for (int r = 1; r < size; ++r) EXPECT_EQ(chose[r], chose[0]) << size << " ranks, rank " << r;
  }
}

}  // namespace
}  // namespace testing
}  // namespace tandem
