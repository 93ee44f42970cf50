#include "forked_ranks.h"

#include <csignal>
#include <cstdlib>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace tandem::test {

std::vector<RankOutcome> run_forked(const std::vector<RankSpec>& specs,
                                    const std::function<std::string(int)>& body,
                                    std::chrono::seconds deadline, std::vector<int> launch) {
  if (launch.empty())
    for (size_t r = 0; r < specs.size(); ++r) launch.push_back(static_cast<int>(r));
  struct Child {
    int rank;
    pid_t pid;
    int fd;
    std::string msg;
    bool done;
    int status;
  };
  // A stopped child is counted once as finished (it cannot finish by itself).
  std::vector<Child> children;
  for (int r : launch) {
    int p[2];
    if (pipe(p) != 0) std::abort();
    pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      for (const auto& kv : specs[r].env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
      std::string msg;
      try {
        msg = body(r);
      } catch (const std::exception& e) { msg = std::string("uncaught exception: ") + e.what(); }
      if (!msg.empty()) (void)!write(p[1], msg.data(), msg.size());
      _exit(msg.empty() ? 0 : 1);
    }
    close(p[1]);
    children.push_back({r, pid, p[0], "", false, 0});
  }
  auto end = std::chrono::steady_clock::now() + deadline;
  size_t left = children.size();
  while (left > 0 && std::chrono::steady_clock::now() < end) {
    for (auto& c : children) {
      if (c.done) continue;
      char buf[4096];
      pollfd pf{c.fd, POLLIN, 0};
      while (poll(&pf, 1, 0) > 0) {
        ssize_t n = read(c.fd, buf, sizeof(buf));
        if (n <= 0) break;
        c.msg.append(buf, static_cast<size_t>(n));
      }
      int st = 0;
      if (waitpid(c.pid, &st, WNOHANG | WUNTRACED) == c.pid) {
        if (WIFSTOPPED(st)) {  // a stopped rank counts as finished; killed below
          --left;
          continue;
        }
        c.status = st;
        ssize_t n;
        while ((n = read(c.fd, buf, sizeof(buf))) > 0) c.msg.append(buf, static_cast<size_t>(n));
        c.done = true;
        --left;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::vector<RankOutcome> out;
  for (auto& c : children) {
    if (!c.done) {
      kill(c.pid, SIGKILL);
      waitpid(c.pid, &c.status, 0);
      if (c.msg.empty()) c.msg = "killed by the test harness (stopped, or past its deadline)";
    }
    close(c.fd);
    RankOutcome o;
    o.rank = c.rank;
    o.exited = WIFEXITED(c.status);
    o.code = o.exited ? WEXITSTATUS(c.status) : WTERMSIG(c.status);
    o.message = c.msg;
    out.push_back(o);
  }
  return out;
}

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

}  // namespace tandem::test
