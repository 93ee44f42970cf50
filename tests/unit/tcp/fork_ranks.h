// Ranks as forked processes, for the tests that kill, stop or move a rank
// into another network namespace. The parent is the rendezvous: each child
// has a socketpair to it, and the parent serves a fixed number of allgather
// rounds (connect_tcp uses two: the secret's broadcast and the endpoints).
// Children report lines ("ready", "result <Kind> <steady ns> <message>")
// through a pipe and leave with _exit, never returning into GoogleTest.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "common/errors.h"
#include "transport/tcp/socket.h"

namespace tandem {
namespace test {

using Clock = std::chrono::steady_clock;

inline void io_full(int fd, void* data, size_t n, bool writing, Clock::time_point deadline) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    pollfd pfd{fd, static_cast<short>(writing ? POLLOUT : POLLIN), 0};
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (ms.count() <= 0) throw TimeoutError("test rendezvous: timed out");
    if (::poll(&pfd, 1, static_cast<int>(ms.count())) <= 0) continue;
    const ssize_t r = writing ? ::send(fd, p, n, MSG_NOSIGNAL) : ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) throw PeerLostError("test rendezvous: the other side closed");
    p += r;
    n -= static_cast<size_t>(r);
  }
}

inline void put_blob(int fd, const Bytes& b, Clock::time_point deadline) {
  uint64_t len = b.size();
  io_full(fd, &len, sizeof len, true, deadline);
  if (len > 0) io_full(fd, const_cast<uint8_t*>(b.data()), b.size(), true, deadline);
}

inline Bytes get_blob(int fd, Clock::time_point deadline) {
  uint64_t len = 0;
  io_full(fd, &len, sizeof len, false, deadline);
  Bytes b(len);
  if (len > 0) io_full(fd, b.data(), len, false, deadline);
  return b;
}

class PipeBootstrap : public Bootstrap {
 public:
  PipeBootstrap(int fd, Identity id) : fd_(fd), id_(std::move(id)) {}
  const Identity& identity() const override { return id_; }
  std::vector<Bytes> allgather(const Bytes& mine, std::chrono::milliseconds timeout) override {
    const auto deadline = Clock::now() + timeout;
    put_blob(fd_, mine, deadline);
    std::vector<Bytes> all;
    for (int r = 0; r < id_.size; ++r) all.push_back(get_blob(fd_, deadline));
    return all;
  }

 private:
  int fd_;
  Identity id_;
};

class ForkRanks {
 public:
  using Body = std::function<void(int rank, Bootstrap&, std::function<void(const std::string&)>)>;

  // node_of_rank: one entry per rank (empty: all on one node).
  ForkRanks(int size, Body body, std::vector<int> node_of_rank = {}) : size_(size) {
    if (node_of_rank.empty()) node_of_rank.assign(size, 0);
    for (int r = 0; r < size; ++r) {
      int sv[2], pv[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 ||
          ::pipe2(pv, O_CLOEXEC) != 0)
        throw SystemError("test: socketpair/pipe", errno);
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::close(sv[0]);
        ::close(pv[0]);
        for (auto& f : boot_) f.reset();
        for (auto& f : report_) f.reset();
        run_child(r, size, node_of_rank, sv[1], pv[1], body);
      }
      ::close(sv[1]);
      ::close(pv[1]);
      pids_.push_back(pid);
      boot_.emplace_back(sv[0]);
      report_.emplace_back(pv[0]);
      buffered_.emplace_back();
    }
  }

  ~ForkRanks() {
    for (pid_t pid : pids_)
      if (pid > 0) ::kill(pid, SIGKILL);
    for (pid_t pid : pids_)
      if (pid > 0) ::waitpid(pid, nullptr, 0);
  }

  // Serves `rounds` allgathers to every child.
  void serve(int rounds, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (int i = 0; i < rounds; ++i) {
      std::vector<Bytes> all;
      for (int r = 0; r < size_; ++r) all.push_back(get_blob(boot_[r].get(), deadline));
      for (int r = 0; r < size_; ++r)
        for (const auto& b : all) put_blob(boot_[r].get(), b, deadline);
    }
  }

  // Next line reported by `rank` ("" when it exited without one).
  std::string line(int rank, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    std::string& buf = buffered_[rank];
    for (;;) {
      const auto nl = buf.find('\n');
      if (nl != std::string::npos) {
        std::string l = buf.substr(0, nl);
        buf.erase(0, nl + 1);
        return l;
      }
      char chunk[4096];
      try {
        io_full(report_[rank].get(), chunk, 1, false, deadline);
      } catch (const PeerLostError&) { return ""; }
      buf.push_back(chunk[0]);
    }
  }

  void signal(int rank, int sig) { ::kill(pids_[rank], sig); }

  // Exit status of `rank` (waits for it).
  int wait(int rank) {
    int status = 0;
    ::waitpid(pids_[rank], &status, 0);
    pids_[rank] = -1;
    return status;
  }

 private:
  [[noreturn]] static void run_child(int rank, int size, const std::vector<int>& nodes, int boot,
                                     int report, const Body& body) {
    auto say = [report](const std::string& l) {
      const std::string s = l + "\n";
      (void)!::write(report, s.data(), s.size());
    };
    int code = 0;
    try {
      Identity id;
      id.rank = rank;
      id.size = size;
      id.node_of_rank = nodes;
      id.cross_rank = nodes[rank];
      id.cross_size = nodes.back() + 1;
      id.job_id = "fork-test";
      PipeBootstrap bootstrap(boot, id);
      body(rank, bootstrap, say);
    } catch (const std::exception& e) {
      say(std::string("uncaught ") + e.what());
      code = 1;
    }
    ::_exit(code);
  }

  int size_;
  std::vector<pid_t> pids_;
  std::vector<tcp::Fd> boot_;
  std::vector<tcp::Fd> report_;
  std::vector<std::string> buffered_;
};

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// "result <Kind> <ns> <message>" for an exception of a known kind.
inline std::string describe(const std::exception& e) {
  const char* kind = dynamic_cast<const PeerLostError*>(&e)  ? "PeerLost"
                     : dynamic_cast<const TimeoutError*>(&e) ? "Timeout"
                     : dynamic_cast<const AbortedError*>(&e) ? "Aborted"
                                                             : "Other";
  return "result " + std::string(kind) + " " + std::to_string(now_ns()) + " " + e.what();
}

}  // namespace test
}  // namespace tandem
