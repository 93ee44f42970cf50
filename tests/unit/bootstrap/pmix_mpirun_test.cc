// The PMIx bootstrap under a real PMIx server: Open MPI 4.1's mpirun, which
// serves the same system PMIx (4.2) that libtandem links. Skipped where
// mpirun is not installed. Arguments (from meson): the probe program.
#include <cstdio>
#include <cstdlib>
#include <gtest/gtest.h>
#include <set>
#include <sstream>
#include <sys/wait.h>

namespace {

std::string g_probe;

struct Result {
  int code = -1;
  std::vector<std::string> lines;  // stdout and stderr together
};

Result run(const std::string& cmd) {
  Result r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::string out;
  while (fgets(buf, sizeof(buf), p)) out += buf;
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) r.lines.push_back(l);
  return r;
}

std::string mpirun(int np, const std::string& args) {
  // The environment must not point the probe at another bootstrap.
  return "env -u TANDEM_BOOTSTRAP -u TANDEM_RENDEZVOUS_ADDR -u TANDEM_RANK -u TANDEM_SIZE "
         "timeout 120 mpirun --allow-run-as-root --oversubscribe -np " +
         std::to_string(np) + " '" + g_probe + "' " + args;
}

class PmixMpirun : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    if (std::system("command -v mpirun >/dev/null 2>&1") != 0)
      GTEST_SKIP() << "mpirun not installed";
  }
};

TEST_P(PmixMpirun, IdentityAllgatherBroadcastBarrier) {
  const int n = GetParam();
  auto r = run(mpirun(n, ""));
  ASSERT_EQ(r.code, 0) << ::testing::PrintToString(r.lines);
  std::string gather, nodes;
  for (int k = 0; k < n; ++k) {
    gather += (k ? "," : "") + ("r" + std::to_string(k));
    nodes += k ? ",0" : "0";
  }
  std::set<int> ranks;
  std::set<std::string> jobs;
  for (const auto& l : r.lines) {
    int rank = -1;
    ASSERT_EQ(std::sscanf(l.c_str(), "rank=%d", &rank), 1) << l;
    ranks.insert(rank);
    EXPECT_NE(l.find(" size=" + std::to_string(n) + " local_rank=" + std::to_string(rank) +
                     " local_size=" + std::to_string(n) +
                     " cross_rank=0 cross_size=1 nodes=" + nodes + " "),
              std::string::npos)
        << l;
    EXPECT_NE(l.find(" gather=" + gather + " bcast=from-" + std::to_string(n - 1) + " "),
              std::string::npos)
        << l;
    auto j = l.find(" job=pmix-");
    ASSERT_NE(j, std::string::npos) << l;
    jobs.insert(l.substr(j, l.find(' ', j + 1) - j));
  }
  EXPECT_EQ(ranks.size(), static_cast<size_t>(n));
  EXPECT_EQ(jobs.size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Sizes, PmixMpirun, ::testing::Values(1, 3, 6));

TEST(PmixMpirunFailures, FenceTimesOutWhenARankSitsOut) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun not installed";
  auto r = run(mpirun(3, "--absent-rank 1 --wait-ms 1000"));
  ASSERT_EQ(r.code, 0) << ::testing::PrintToString(r.lines);
  int timed_out = 0;
  for (const auto& l : r.lines)
    if (l.find("barrier_error=bootstrap barrier (PMIx_Fence) did not complete within 1 s") !=
        std::string::npos)
      ++timed_out;
  EXPECT_EQ(timed_out, 2) << ::testing::PrintToString(r.lines);
}

TEST(PmixMpirunFailures, NoServerIsABootstrapError) {
  auto r = run("env PMIX_RANK=0 PMIX_NAMESPACE=none '" + g_probe + "'");
  EXPECT_EQ(r.code, 1);
  ASSERT_FALSE(r.lines.empty());
  EXPECT_NE(r.lines.back().find("PMIx_Init failed"), std::string::npos) << r.lines.back();
  EXPECT_NE(r.lines.back().find("srun --mpi=pmix"), std::string::npos) << r.lines.back();
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s BOOTSTRAP_PROBE\n", argv[0]);
    return 2;
  }
  g_probe = argv[1];
  return RUN_ALL_TESTS();
}
