// tandem-run as a user runs it: the binary and the probe program are given as
// arguments by meson; each test runs a command line and checks exit status,
// stdout and stderr.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace {

std::string g_tandem_run;
std::string g_probe;
std::string g_tandem_bind;

struct Result {
  int code = -1;
  std::string out, err;
  std::vector<std::string> out_lines() const {
    std::vector<std::string> lines;
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  }
};

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `tandem-run <args>` through sh; args is shell text.
Result tandem_run(const std::string& args) {
  char dir[] = "/tmp/tandem-run-test-XXXXXX";
  if (!mkdtemp(dir)) std::abort();
  std::string d = dir;
  std::string cmd = "'" + g_tandem_run + "' " + args + " >" + d + "/out 2>" + d + "/err";
  int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(d + "/out");
  r.err = slurp(d + "/err");
  unlink((d + "/out").c_str());
  unlink((d + "/err").c_str());
  rmdir(dir);
  return r;
}

TEST(TandemRun, EveryRankGetsItsIdentity) {
  auto r = tandem_run(
      "-np 4 sh -c 'echo $TANDEM_RANK/$TANDEM_SIZE/$HOROVOD_LOCAL_RANK/$HOROVOD_CROSS_SIZE'");
  ASSERT_EQ(r.code, 0) << r.err;
  auto lines = r.out_lines();
  std::multiset<std::string> got(lines.begin(), lines.end());
  EXPECT_EQ(got, (std::multiset<std::string>{"0/4/0/1", "1/4/1/1", "2/4/2/1", "3/4/3/1"}));
}

TEST(TandemRun, RanksJoinThroughTheStore) {
  auto r = tandem_run("-np 3 '" + g_probe + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  auto lines = r.out_lines();
  ASSERT_EQ(lines.size(), 3u) << r.out;
  std::set<std::string> jobs;
  std::set<int> ranks;
  for (const auto& l : lines) {
    int rank = -1;
    ASSERT_EQ(std::sscanf(l.c_str(), "rank=%d", &rank), 1) << l;
    ranks.insert(rank);
    EXPECT_NE(l.find(" size=3 local_rank=" + std::to_string(rank) +
                     " local_size=3 cross_rank=0 "
                     "cross_size=1 nodes=0,0,0 "),
              std::string::npos)
        << l;
    EXPECT_NE(l.find(" gather=r0,r1,r2 bcast=from-2 "), std::string::npos) << l;
    auto j = l.find(" job=");
    jobs.insert(l.substr(j, l.find(' ', j + 1) - j));
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(jobs.size(), 1u) << "ranks disagree on the job id";
}

// --node-per-rank: every rank its own node, so the engine sees as many
// nodes as ranks (cross_rank = rank) and the Horovod variables say so too.
// --store-stats: one line with what the store served.
TEST(TandemRun, NodePerRankMakesEveryRankItsOwnNode) {
  auto r = tandem_run("--node-per-rank --store-stats -np 3 '" + g_probe + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  auto lines = r.out_lines();
  ASSERT_EQ(lines.size(), 3u) << r.out;
  for (const auto& l : lines) {
    int rank = -1;
    ASSERT_EQ(std::sscanf(l.c_str(), "rank=%d", &rank), 1) << l;
    EXPECT_NE(l.find(" size=3 local_rank=0 local_size=1 cross_rank=" + std::to_string(rank) +
                     " cross_size=3 nodes=0,1,2 "),
              std::string::npos)
        << l;
  }
  EXPECT_NE(r.err.find("tandem-run INFO tools: rendezvous store served "), std::string::npos)
      << r.err;
  auto env = tandem_run(
      "--node-per-rank -np 2 sh -c 'echo "
      "$TANDEM_RANK:$HOROVOD_LOCAL_RANK/$HOROVOD_LOCAL_SIZE/$HOROVOD_CROSS_RANK/"
      "$HOROVOD_CROSS_SIZE:${TANDEM_NODE_NAME##*.}'");
  ASSERT_EQ(env.code, 0) << env.err;
  auto got = env.out_lines();
  std::multiset<std::string> set(got.begin(), got.end());
  EXPECT_EQ(set, (std::multiset<std::string>{"0:0/1/0/2:rank0", "1:0/1/1/2:rank1"}));
}

TEST(TandemRun, FailingRankStopsTheJobWithItsStatus) {
  // The other ranks would sleep far past the test's timeout if they were not
  // stopped.
  auto r = tandem_run("-np 3 sh -c 'if [ $TANDEM_RANK = 2 ]; then exit 3; fi; exec sleep 3600'");
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("tandem-run ERROR tools: rank 2 exited with status 3; stopping the job"),
            std::string::npos)
      << r.err;
}

TEST(TandemRun, KilledRankIsNamedWithItsSignal) {
  auto r =
      tandem_run("-np 3 sh -c 'if [ $TANDEM_RANK = 1 ]; then kill -9 $$; fi; exec sleep 3600'");
  EXPECT_EQ(r.code, 128 + 9);
  EXPECT_NE(r.err.find("rank 1 was killed by signal 9 (Killed)"), std::string::npos) << r.err;
}

TEST(TandemRun, LinesOfRanksNeverMix) {
  // Each rank writes 3000 long lines through `head`, which writes in blocks
  // that cut lines anywhere: only line-wise forwarding keeps them whole.
  auto r =
      tandem_run("-np 4 sh -c 'yes \"$(printf \"rank%s-%0300d\" $TANDEM_RANK 0)\" | head -n 3000'");
  ASSERT_EQ(r.code, 0) << r.err;
  std::map<std::string, int> count;
  for (const auto& l : r.out_lines()) ++count[l];
  ASSERT_EQ(count.size(), 4u) << "mixed or broken lines in the output";
  for (int k = 0; k < 4; ++k) {
    char expect[400];
    std::snprintf(expect, sizeof(expect), "rank%d-%0300d", k, 0);
    EXPECT_EQ(count[expect], 3000) << "rank " << k;
  }
}

TEST(TandemRun, LabelsAndUnterminatedLastLines) {
  auto r = tandem_run("-np 2 --label sh -c 'printf \"a\\nb\" ; printf \"e\" >&2'");
  ASSERT_EQ(r.code, 0) << r.err;
  auto lines = r.out_lines();
  std::multiset<std::string> got(lines.begin(), lines.end());
  EXPECT_EQ(got, (std::multiset<std::string>{"[0] a", "[0] b", "[1] a", "[1] b"}));
  EXPECT_NE(r.err.find("[1] e\n"), std::string::npos) << r.err;
}

TEST(TandemRun, JobTimeout) {
  auto r = tandem_run("-np 2 --timeout 0.5 sleep 3600");
  EXPECT_EQ(r.code, 124);
  EXPECT_NE(r.err.find("the job ran past --timeout 0.5 s"), std::string::npos) << r.err;
}

TEST(TandemRun, BadUsage) {
  auto r = tandem_run("-np 0 true");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("-np expects a number of ranks in 1..4096, got '0'"), std::string::npos)
      << r.err;
  r = tandem_run("-np 2");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no command to run"), std::string::npos) << r.err;
  r = tandem_run("--timeout soon -np 2 true");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--timeout expects a positive number of seconds, got 'soon'"),
            std::string::npos)
      << r.err;
  r = tandem_run("-np 2 /nonexistent/program");
  EXPECT_EQ(r.code, 127);
  EXPECT_NE(r.err.find("cannot run '/nonexistent/program': No such file or directory"),
            std::string::npos)
      << r.err;
}

// The value of "key": "..." at or after `from` in tandem-bind's JSON; npos
// in *at when absent before `until`.
std::string json_field(const std::string& json, const std::string& key, size_t from, size_t until,
                       size_t* at) {
  const std::string k = "\"" + key + "\": \"";
  size_t p = json.find(k, from);
  if (p == std::string::npos || p >= until) {
    *at = std::string::npos;
    return "";
  }
  p += k.size();
  *at = p;
  return json.substr(p, json.find('"', p) - p);
}

// --bind gives every rank what the planner gives that task (tandem-bind
// shows the same plan): its CPUs, and the TCP interface it should use.
TEST(TandemRun, BindAppliesTheNodePlan) {
  for (int np : {1, 2, 3}) {
    auto r =
        tandem_run("-np " + std::to_string(np) +
                   " --bind sh -c 'echo $TANDEM_RANK $(sed -n \"s/^Cpus_allowed_list:\\s*//p\" "
                   "/proc/self/status) if=${TANDEM_TCP_IFNAME:-}'");
    ASSERT_EQ(r.code, 0) << r.err;
    std::map<int, std::pair<std::string, std::string>> got;  // rank -> cpus, ifname
    for (const auto& l : r.out_lines()) {
      std::istringstream in(l);
      int rank = -1;
      std::string cpus, ifname;
      in >> rank >> cpus >> ifname;
      got[rank] = {cpus, ifname.substr(3)};
    }
    ASSERT_EQ(got.size(), static_cast<size_t>(np)) << r.out;
    char dir[] = "/tmp/tandem-run-test-XXXXXX";
    ASSERT_TRUE(mkdtemp(dir));
    const std::string json_path = std::string(dir) + "/plan.json";
    ASSERT_EQ(std::system(("'" + g_tandem_bind + "' --tasks " + std::to_string(np) + " --json >" +
                           json_path)
                              .c_str()),
              0);
    const std::string json = slurp(json_path);
    unlink(json_path.c_str());
    rmdir(dir);
    size_t task = json.find("\"local_id\"");
    for (int k = 0; k < np; ++k) {
      ASSERT_NE(task, std::string::npos) << json;
      const size_t next = json.find("\"local_id\"", task + 1);
      size_t at = 0;
      const std::string cpus = json_field(json, "cpus", task, next, &at);
      ASSERT_NE(at, std::string::npos) << json;
      const std::string ifname = json_field(json, "TANDEM_TCP_IFNAME", task, next, &at);
      EXPECT_EQ(got[k].first, cpus) << "rank " << k << " of " << np << ": " << json;
      EXPECT_EQ(got[k].second, ifname) << "rank " << k << " of " << np;
      task = next;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s TANDEM_RUN BOOTSTRAP_PROBE TANDEM_BIND\n", argv[0]);
    return 2;
  }
  g_tandem_run = argv[1];
  g_probe = argv[2];
  g_tandem_bind = argv[3];
  return RUN_ALL_TESTS();
}
