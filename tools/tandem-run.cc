// tandem-run: start N ranks of a program on this host, like `horovodrun -np N`
// or `mpirun -np N`, joined through Tandem's TCP rendezvous store.
//
//   tandem-run -np 4 python train.py
//
// It runs the store itself (an ephemeral port on every address, closed to
// anyone without the per-job token it hands to its ranks), starts the ranks
// with TANDEM_RENDEZVOUS_ADDR/TOKEN, TANDEM_RANK/SIZE and the HOROVOD_*
// identity variables set, forwards their output line by line so that lines
// of different ranks never mix, and ends the job as soon as one rank fails:
// the other ranks get SIGTERM, then SIGKILL after a grace period, and
// tandem-run exits with the first failing rank's status. See docs/bootstrap.md.
//
// With --elastic the job is elastic (docs/elastic.md), as under
// srun --horovod=elastic: tandem-run runs the membership service instead of
// the store, a failed rank does not stop the others, and the job succeeds
// when the service saw no failure and some rank finished its work.
// --ranks-per-node K gives ranks r node names "host<r/K>" (TANDEM_NODE_NAME),
// so that one host plays several nodes (a failed rank's "node" is excluded).
//
// With --bind each rank gets the CPUs (and GPU, NIC environment) that
// `srun --horovod=on` would give it on this node: the same planner
// (plugin/planner, docs/binding.md), so that benchmarks run as jobs do.
// With --node-per-rank every rank is its own simulated node
// (TANDEM_NODE_NAME), so the engine connects them over TCP as it would
// across machines: the scale harness (contrib/bench/scale.sh) runs hundreds
// of "nodes" on one host this way.
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <memory>
#include <string>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "tool_log.h"
#include "apply.h"
#include "bootstrap/identity.h"
#include "hwloc_loader.h"
#include "planner.h"
#include "bootstrap/tcp_store_server.h"
#include "common/errors.h"
#include "elastic/service.h"

namespace {

using tandem::Clock;

constexpr int kUsageError = 2;
constexpr auto kKillGrace = std::chrono::seconds(3);

struct Options {
  int np = 0;
  double timeout_s = 0;  // 0: no limit on the job's wall-clock time
  std::string timeout_text;
  bool label = false;
  bool bind = false;
  bool node_per_rank = false;
  bool store_stats = false;
  bool elastic = false;
  int ranks_per_node = 0;  // 0: every rank on this host's own name
  std::vector<std::string> command;
};

[[noreturn]] void usage_error(const std::string& msg) {
  TANDEM_ERROR(tools, "%s", msg.c_str());
  std::fputs(
      "usage: tandem-run -np N [--timeout SECONDS] [--label] [--bind] [--node-per-rank]\n"
      "                  [--store-stats] [--elastic [--ranks-per-node K]] COMMAND [ARGS...]\n",
      stderr);
  std::exit(kUsageError);
}

Options parse_args(int argc, char** argv) {
  Options o;
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "-np" || a == "-n" || a == "--np") {
      std::string v = value();
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < 1 || n > 4096)
        usage_error(a + " expects a number of ranks in 1..4096, got '" + v + "'");
      o.np = static_cast<int>(n);
    } else if (a == "--timeout") {
      std::string v = value();
      char* end = nullptr;
      double s = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(s > 0) || s > 1e7)
        usage_error("--timeout expects a positive number of seconds, got '" + v + "'");
      o.timeout_s = s;
      o.timeout_text = v;
    } else if (a == "--label" || a == "-l") {
      o.label = true;
    } else if (a == "--bind") {
      o.bind = true;
    } else if (a == "--node-per-rank") {
      o.node_per_rank = true;
    } else if (a == "--store-stats") {
      o.store_stats = true;
    } else if (a == "--elastic") {
      o.elastic = true;
    } else if (a == "--ranks-per-node") {
      std::string v = value();
      char* end = nullptr;
      long k = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || k < 1 || k > 4096)
        usage_error("--ranks-per-node expects a number in 1..4096, got '" + v + "'");
      o.ranks_per_node = static_cast<int>(k);
    } else if (a == "--") {
      ++i;
      break;
    } else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: tandem-run -np N [--timeout SECONDS] [--label] [--bind] [--node-per-rank]\n"
          "                  [--store-stats] [--elastic [--ranks-per-node K]] COMMAND [ARGS...]\n"
          "Starts N ranks of COMMAND on this host, joined by Tandem's TCP rendezvous.\n"
          "  -np N            number of ranks\n"
          "  --timeout S      stop the job (exit 124) when it runs longer than S seconds\n"
          "  --label, -l      prefix every output line with [rank]\n"
          "  --bind           bind each rank as srun --horovod=on would on this node\n"
          "                   (CPUs, GPU, NIC; see tandem-bind --tasks N)\n"
          "  --node-per-rank  every rank its own simulated node (TANDEM_NODE_NAME=\n"
          "                   <host>.rank<r>): ranks connect over TCP as across nodes\n"
          "  --store-stats    at the end, print the requests and bytes the rendezvous\n"
          "                   store served\n"
          "  --elastic        an elastic job (hvd.elastic): a failed rank does not stop\n"
          "                   the others (docs/elastic.md)\n"
          "  --ranks-per-node K  with --elastic: rank r plays node host<r/K>\n");
      std::exit(0);
    } else {
      usage_error("unknown option '" + a + "'");
    }
  }
  if (o.np == 0) usage_error("-np N is required");
  if (o.ranks_per_node && !o.elastic) usage_error("--ranks-per-node needs --elastic");
  if (o.ranks_per_node && o.node_per_rank)
    usage_error("--node-per-rank and --ranks-per-node both name the ranks' nodes: give one");
  for (; i < argc; ++i) o.command.push_back(argv[i]);
  if (o.command.empty()) usage_error("no command to run");
  return o;
}

// Output of one rank's stdout or stderr: bytes are held until a line is
// complete and then written with a single write(), which is what keeps the
// lines of different ranks from mixing.
struct Stream {
  int rank;
  int fd;      // read end of the pipe, -1 once drained
  int out_fd;  // 1 or 2
  std::string pending;
};

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // our own stdout is gone: nothing useful left to do
    off += static_cast<size_t>(n);
  }
}

void emit(Stream& s, bool label, bool flush_partial) {
  // Lines longer than this are passed on in pieces rather than held forever.
  constexpr size_t kMaxHeld = 1 << 16;
  std::string prefix = label ? "[" + std::to_string(s.rank) + "] " : "";
  size_t start = 0;
  std::string out;
  for (;;) {
    size_t nl = s.pending.find('\n', start);
    if (nl == std::string::npos) break;
    out += prefix;
    out.append(s.pending, start, nl + 1 - start);
    start = nl + 1;
  }
  s.pending.erase(0, start);
  if (!s.pending.empty() && (flush_partial || s.pending.size() >= kMaxHeld)) {
    out += prefix + s.pending + (flush_partial ? "\n" : "");
    s.pending.clear();
  }
  if (!out.empty()) write_all(s.out_fd, out);
}

struct Rank {
  pid_t pid = -1;
  bool running = false;
};

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  int sig = WTERMSIG(status);
  return "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
}

int exit_code_of(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class Launcher {
 public:
  explicit Launcher(Options o) : o_(std::move(o)), ranks_(o_.np) {}
  int run();

 private:
  void start_rank(int r, const std::string& addr, const std::string& token, const sigset_t& old);
  void signal_all(int sig);
  void reap();
  void pump(int timeout_ms);
  void stop_job(const std::string& why, int code);

  Options o_;
  // --bind: the machine and every rank's plan, made before any fork.
  std::unique_ptr<tandem::planner::LoadedTopology> topology_;
  tandem::planner::NodePlan plan_;
  std::vector<Rank> ranks_;
  std::vector<Stream> streams_;
  int running_ = 0;
  int exit_code_ = 0;
  int first_failure_ = 0;  // --elastic: the exit code of the first rank that failed
  bool stopping_ = false;
  Clock::time_point kill_at_;
  int sigfd_ = -1;
};

void Launcher::start_rank(int r, const std::string& addr, const std::string& token,
                          const sigset_t& old) {
  int out[2], err[2], exec_err[2];
  if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) || pipe2(exec_err, O_CLOEXEC))
    throw tandem::SystemError("pipe", errno);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw tandem::SystemError("fork", errno);
  if (pid == 0) {
    // Own process group, so that stopping a rank also stops what it spawned;
    // killed with us if tandem-run dies, so that no rank outlives the store.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    sigprocmask(SIG_SETMASK, &old, nullptr);
    dup2(out[1], 1);
    dup2(err[1], 2);
    const std::string n = std::to_string(o_.np), rs = std::to_string(r);
    if (o_.elastic) {
      setenv("TANDEM_ELASTIC_ADDR", addr.c_str(), 1);
      setenv("TANDEM_ELASTIC_TOKEN", token.c_str(), 1);
      setenv("HOROVOD_ELASTIC", "1", 1);              // Horovod's marker of an elastic worker
      setenv("TANDEM_ELASTIC_ORDER", rs.c_str(), 1);  // generation 0's ranks are ours
      std::string node = "localhost";
      if (o_.ranks_per_node) {
        node = "host" + std::to_string(r / o_.ranks_per_node);
        setenv("TANDEM_NODE_NAME", node.c_str(), 1);
      }
      const std::string label =
          node + "[" + std::to_string(o_.ranks_per_node ? r % o_.ranks_per_node : r) + "]";
      setenv("TANDEM_ELASTIC_LABEL", label.c_str(), 1);
    } else {
      setenv("TANDEM_RENDEZVOUS_ADDR", addr.c_str(), 1);
      setenv("TANDEM_RENDEZVOUS_TOKEN", token.c_str(), 1);
      setenv("TANDEM_RENDEZVOUS_SERVE", "external", 1);
      setenv("TANDEM_RANK", rs.c_str(), 1);
      setenv("TANDEM_SIZE", n.c_str(), 1);
    }
    // The same identity variables the Slurm plugin exports: one host.
    setenv("HOROVOD_RANK", rs.c_str(), 1);
    setenv("HOROVOD_SIZE", n.c_str(), 1);
    setenv("HOROVOD_LOCAL_RANK", rs.c_str(), 1);
    setenv("HOROVOD_LOCAL_SIZE", n.c_str(), 1);
    if (o_.node_per_rank) {
      // One node per rank: the engine derives the layout from the names.
      char host[256] = "host";
      gethostname(host, sizeof host - 1);
      setenv("TANDEM_NODE_NAME", (std::string(host) + ".rank" + rs).c_str(), 1);
      setenv("HOROVOD_LOCAL_RANK", "0", 1);
      setenv("HOROVOD_LOCAL_SIZE", "1", 1);
      setenv("HOROVOD_CROSS_RANK", rs.c_str(), 1);
      setenv("HOROVOD_CROSS_SIZE", n.c_str(), 1);
    } else {
      setenv("HOROVOD_CROSS_RANK", "0", 1);
      setenv("HOROVOD_CROSS_SIZE", "1", 1);
    }
    if (topology_) {
      const tandem::planner::TaskPlan& task = plan_.tasks[static_cast<size_t>(r)];
      try {
        tandem::planner::apply_binding(*topology_, task);
      } catch (const std::exception& e) {
        TANDEM_ERROR(tools, "rank %d: --bind failed: %s", r, e.what());
        _exit(126);
      }
      for (const tandem::planner::EnvVar& var : task.env)
        setenv(var.name.c_str(), var.value.c_str(), var.keep_user_value ? 0 : 1);
    }
    std::vector<char*> argv;
    for (auto& a : o_.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    int e = errno;
    (void)!::write(exec_err[1], &e, sizeof(e));
    _exit(127);
  }
  setpgid(pid, pid);  // also here: no race with a signal sent right after fork
  close(out[1]);
  close(err[1]);
  close(exec_err[1]);
  int e = 0;
  ssize_t got = read(exec_err[0], &e, sizeof(e));
  close(exec_err[0]);
  ranks_[r] = {pid, true};
  ++running_;
  streams_.push_back({r, out[0], 1, ""});
  streams_.push_back({r, err[0], 2, ""});
  if (got == static_cast<ssize_t>(sizeof(e)))
    stop_job("cannot run '" + o_.command[0] + "': " + std::strerror(e), 127);
}

void Launcher::signal_all(int sig) {
  for (auto& r : ranks_)
    if (r.running) kill(-r.pid, sig);
}

void Launcher::stop_job(const std::string& why, int code) {
  if (stopping_) return;
  TANDEM_ERROR(tools, "%s; stopping the job", why.c_str());
  stopping_ = true;
  exit_code_ = code;
  signal_all(SIGTERM);
  kill_at_ = Clock::now() + kKillGrace;
}

void Launcher::reap() {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    for (size_t r = 0; r < ranks_.size(); ++r) {
      if (ranks_[r].pid != pid || !ranks_[r].running) continue;
      ranks_[r].running = false;
      --running_;
      bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
      if (failed && o_.elastic) {
        // The job goes on without it; the membership service decides.
        TANDEM_WARN(tools, "rank %zu %s", r, describe(status).c_str());
        if (first_failure_ == 0) first_failure_ = exit_code_of(status);
        continue;
      }
      if (failed && !stopping_)
        stop_job("rank " + std::to_string(r) + " " + describe(status), exit_code_of(status));
    }
  }
}

// Moves output from the ranks' pipes to ours, and handles signals sent to us.
void Launcher::pump(int timeout_ms) {
  std::vector<pollfd> pfds{{sigfd_, POLLIN, 0}};
  std::vector<Stream*> owners{nullptr};
  for (auto& s : streams_)
    if (s.fd >= 0) {
      pfds.push_back({s.fd, POLLIN, 0});
      owners.push_back(&s);
    }
  if (poll(pfds.data(), pfds.size(), timeout_ms) < 0 && errno != EINTR)
    throw tandem::SystemError("poll", errno);
  if (pfds[0].revents & POLLIN) {
    signalfd_siginfo si;
    while (read(sigfd_, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
      if (si.ssi_signo == SIGCHLD) continue;
      stop_job(std::string("got ") + strsignal(static_cast<int>(si.ssi_signo)),
               128 + static_cast<int>(si.ssi_signo));
    }
  }
  for (size_t i = 1; i < pfds.size(); ++i) {
    if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    Stream& s = *owners[i];
    char buf[65536];
    ssize_t n = read(s.fd, buf, sizeof(buf));
    if (n > 0) {
      s.pending.append(buf, static_cast<size_t>(n));
      emit(s, o_.label, false);
    } else if (n == 0 || errno != EINTR) {
      emit(s, o_.label, true);
      close(s.fd);
      s.fd = -1;
    }
  }
}

int Launcher::run() {
  // Signals arrive through a signalfd so that the loop handles them in order
  // with output and child exits; children get the old mask back.
  sigset_t mask, old;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, sig);
  sigprocmask(SIG_BLOCK, &mask, &old);
  sigfd_ = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd_ < 0) throw tandem::SystemError("signalfd", errno);

  // The token only needs to be unguessable; a job id generator gives 64
  // random bits, two of them 128.
  if (o_.bind) {
    namespace tp = tandem::planner;
    topology_ = std::make_unique<tp::LoadedTopology>(tp::LoadedTopology::live());
    tp::PlanRequest request;
    request.local_tasks = o_.np;
    plan_ = tp::plan_node(topology_->model(), request);
  }
  const std::string token = tandem::random_job_id("tok") + tandem::random_job_id("en");
  std::unique_ptr<tandem::TcpStoreServer> store;
  std::unique_ptr<tandem::elastic::MembershipService> service;
  uint16_t port = 0;
  if (o_.elastic) {
    tandem::elastic::ServiceSettings settings =
        tandem::elastic::ServiceSettings::from_environment();
    settings.token = token;
    settings.expected = o_.np;
    service = std::make_unique<tandem::elastic::MembershipService>(std::move(settings));
    port = service->port();
  } else {
    store = std::make_unique<tandem::TcpStoreServer>(token, 0);
    port = store->port();
  }
  const std::string addr = "127.0.0.1:" + std::to_string(port);
  for (int r = 0; r < o_.np && !stopping_; ++r) start_rank(r, addr, token, old);

  const auto job_deadline =
      o_.timeout_s > 0
          ? Clock::now() + std::chrono::milliseconds(static_cast<long long>(o_.timeout_s * 1000))
          : Clock::time_point::max();
  auto streams_open = [&] {
    return std::any_of(streams_.begin(), streams_.end(), [](const Stream& s) { return s.fd >= 0; });
  };
  while (running_ > 0) {
    auto next = stopping_ ? kill_at_ : job_deadline;
    pump(std::min(tandem::ms_left(next), 1000));
    reap();
    if (!stopping_ && Clock::now() >= job_deadline)
      stop_job("the job ran past --timeout " + o_.timeout_text + " s", 124);
    if (stopping_ && Clock::now() >= kill_at_ && running_ > 0) {
      signal_all(SIGKILL);
      kill_at_ = Clock::now() + std::chrono::hours(1);
    }
  }
  // Every rank is gone; what is left in the pipes is read out. A process the
  // ranks left behind may hold a pipe open, so this ends after a grace time.
  const auto drain_until = Clock::now() + std::chrono::seconds(1);
  while (streams_open() && Clock::now() < drain_until) pump(tandem::ms_left(drain_until));
  for (auto& s : streams_)
    if (s.fd >= 0) {
      emit(s, o_.label, true);
      close(s.fd);
    }
  if (o_.store_stats && store) {  // an elastic job has no store
    const auto t = store->traffic();
    char line[256];
    std::snprintf(line, sizeof line,
                  "rendezvous store served %llu requests, %llu bytes in, %llu bytes out, %.3f s "
                  "of CPU",
                  static_cast<unsigned long long>(t.requests),
                  static_cast<unsigned long long>(t.bytes_in),
                  static_cast<unsigned long long>(t.bytes_out), t.cpu_ns / 1e9);
    TANDEM_LOG_ALWAYS(kInfo, tools, line);  // asked for with --store-stats
  }
  if (service && exit_code_ == 0) {
    const auto sum = service->summary();
    char line[512];
    std::snprintf(line, sizeof line,
                  "elastic job: %u generation%s, the last of %d ranks; %d processes finished, %d "
                  "lost, %d removed%s%s",
                  sum.generations, sum.generations == 1 ? "" : "s", sum.size, sum.done, sum.lost,
                  sum.removed, sum.failure.empty() ? "" : "; failed: ", sum.failure.c_str());
    TANDEM_LOG_ALWAYS(kInfo, elastic, line);  // the job's outcome, as srun's plugin gives it
    if (!sum.failure.empty() || sum.done == 0) return first_failure_ ? first_failure_ : 1;
  }
  return exit_code_;
}

}  // namespace

int main(int argc, char** argv) {
  if (!tandem::tools::start_log("tandem-run")) return kUsageError;
  Options o = parse_args(argc, argv);
  try {
    return Launcher(std::move(o)).run();
  } catch (const std::exception& e) {
    TANDEM_ERROR(tools, "%s", e.what());
    return 1;
  }
}
