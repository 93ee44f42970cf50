// A topology loaded once per node (by slurmstepd, before it forks the
// tasks) and cut to each task's cgroup must give the planner exactly what a
// task loading the live topology itself would see: the same model in this
// process, and in a child moved into a cpuset cgroup of one CPU (what
// task/cgroup does to a task) that CPU alone, where the node's copy, loaded
// outside the cgroup, allows every CPU.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "hwloc_loader.h"

namespace tandem::planner {
namespace {

std::string describe(const Topology& t) {
  std::ostringstream o;
  o << "allowed " << t.allowed.to_string() << ";";
  for (const NumaDomain& d : t.numa) {
    o << " numa " << d.os_index << " package " << d.package << " cores";
    for (const CpuSet& c : d.cores) o << " " << c.to_string();
    o << ";";
  }
  for (const Gpu& g : t.gpus) o << " gpu " << g.pci.bus_id << " numa " << g.pci.numa << ";";
  for (const Nic& n : t.nics) o << " nic " << n.name() << " " << n.pci.bus_id << ";";
  return o.str();
}

TEST(SharedTopology, CutToThisProcessEqualsALiveLoad) {
  const LoadedTopology node = LoadedTopology::live_shared();
  EXPECT_EQ(describe(node.for_this_process().model()), describe(LoadedTopology::live().model()));
  // Twice from the same node copy: the copy is not consumed.
  EXPECT_EQ(describe(node.for_this_process().model()), describe(LoadedTopology::live().model()));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

bool write_file(const std::string& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY);
  if (fd < 0) return false;
  const bool ok = ::write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
  ::close(fd);
  return ok;
}

TEST(SharedTopology, TaskInACpusetCgroupSeesOnlyItsCpus) {
  const std::string root = "/sys/fs/cgroup/cpuset";
  const LoadedTopology node = LoadedTopology::live_shared();
  const CpuSet all = LoadedTopology::live().model().allowed;
  if (::geteuid() != 0 || ::access((root + "/cpuset.cpus").c_str(), R_OK) != 0 || all.size() < 2)
    GTEST_SKIP() << "needs root, a cgroup v1 cpuset hierarchy at " << root << " and 2 CPUs";
  const std::string dir = root + "/tandem-topology-test-" + std::to_string(::getpid());
  if (::mkdir(dir.c_str(), 0755) != 0)
    GTEST_SKIP() << "cannot create " << dir << ": " << std::strerror(errno);
  const int cpu = all.cpus().back();
  const bool set = write_file(dir + "/cpuset.cpus", std::to_string(cpu)) &&
                   write_file(dir + "/cpuset.mems", read_file(root + "/cpuset.mems"));
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t pid = set ? ::fork() : -1;
  if (pid == 0) {
    ::close(pipe_fds[0]);
    std::string report;
    try {
      if (!write_file(dir + "/tasks", std::to_string(::getpid())))
        throw std::runtime_error("cannot join the cgroup");
      report = node.for_this_process().model().allowed.to_string() + " " +
               LoadedTopology::live().model().allowed.to_string();
    } catch (const std::exception& e) { report = std::string("error: ") + e.what(); }
    (void)!::write(pipe_fds[1], report.data(), report.size());
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  char buf[256] = {};
  ssize_t n = pid > 0 ? ::read(pipe_fds[0], buf, sizeof buf - 1) : 0;
  ::close(pipe_fds[0]);
  if (pid > 0) ::waitpid(pid, nullptr, 0);
  ::rmdir(dir.c_str());
  ASSERT_TRUE(set) << "could not configure " << dir;
  ASSERT_GT(n, 0);
  const std::string want = std::to_string(cpu);
  EXPECT_EQ(std::string(buf), want + " " + want)
      << "node copy cut to the task's cgroup, then a live load in it";
  EXPECT_EQ(node.model().allowed.to_string(), all.to_string())
      << "the node's copy allows every CPU";
}

}  // namespace
}  // namespace tandem::planner
