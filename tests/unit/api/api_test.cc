// The C API: result codes and messages, nonblocking requests, and whole jobs
// of forked processes joining through the TCP store (TANDEM_NODE_NAME fakes
// several nodes on this host), so the hierarchical allreduce runs over real
// shared memory and real TCP.
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tandem/tandem.h"

namespace {

void clear_launch_environment() {
  for (const char* v : {"TANDEM_RENDEZVOUS_ADDR", "TANDEM_RANK", "TANDEM_SIZE", "PMIX_RANK",
                        "TANDEM_BOOTSTRAP", "TANDEM_NODE_NAME", "TANDEM_RENDEZVOUS_TOKEN"})
    unsetenv(v);
}

TEST(Api, OneRankWorld) {
  clear_launch_environment();
  float x[4] = {1, 2, 3, 4}, y[4] = {};
  EXPECT_EQ(tandem_allreduce(x, y, 4, TANDEM_FLOAT32, TANDEM_SUM, 1, 1),
            TANDEM_ERR_NOT_INITIALIZED);
  EXPECT_NE(std::string(tandem_last_error()).find("tandem_init"), std::string::npos);
  ASSERT_EQ(tandem_init(), TANDEM_SUCCESS) << tandem_last_error();
  ASSERT_EQ(tandem_init(), TANDEM_SUCCESS) << "second init is a no-op";
  int rank = -1, size = -1;
  EXPECT_EQ(tandem_rank(&rank), TANDEM_SUCCESS);
  EXPECT_EQ(tandem_size(&size), TANDEM_SUCCESS);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(size, 1);
  EXPECT_EQ(tandem_rank(nullptr), TANDEM_ERR_INVALID_ARGUMENT);

  EXPECT_EQ(tandem_allreduce(x, y, 4, TANDEM_FLOAT32, TANDEM_AVERAGE, 2.0, 0.5), TANDEM_SUCCESS);
  EXPECT_EQ(y[3], 4.0f);
  EXPECT_EQ(tandem_allreduce(nullptr, y, 4, TANDEM_FLOAT32, TANDEM_SUM, 1, 1),
            TANDEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tandem_last_error()).find("NULL"), std::string::npos)
      << tandem_last_error();
  EXPECT_EQ(tandem_allreduce(x, y, 4, static_cast<tandem_dtype_t>(77), TANDEM_SUM, 1, 1),
            TANDEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tandem_last_error()).find("77"), std::string::npos) << tandem_last_error();
  EXPECT_EQ(tandem_allreduce(x, y, 4, TANDEM_FLOAT32, static_cast<tandem_op_t>(-2), 1, 1),
            TANDEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(tandem_broadcast(x, 4, TANDEM_FLOAT32, 1), TANDEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tandem_last_error()).find("root 1"), std::string::npos)
      << tandem_last_error();
  size_t counts[1] = {3};
  EXPECT_EQ(tandem_allgatherv(x, 4, y, counts, TANDEM_FLOAT32), TANDEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(tandem_allgatherv(x, 4, y, nullptr, TANDEM_FLOAT32), TANDEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(tandem_allreduce(x, y, 0, TANDEM_FLOAT32, TANDEM_SUM, 1, 1), TANDEM_SUCCESS)
      << "count 0";

  // Nonblocking: complete in order; bad arguments are reported at once.
  tandem_request_t a = nullptr, b = nullptr;
  float z[4] = {};
  ASSERT_EQ(tandem_iallreduce(x, y, 4, TANDEM_FLOAT32, TANDEM_MAX, 1, 1, &a), TANDEM_SUCCESS);
  ASSERT_EQ(tandem_iallgather(x, 4, z, TANDEM_FLOAT32, &b), TANDEM_SUCCESS);
  EXPECT_EQ(tandem_wait(b), TANDEM_SUCCESS);
  EXPECT_EQ(tandem_test(a), TANDEM_SUCCESS) << "started first, so finished first";
  EXPECT_EQ(z[2], 3.0f);
  tandem_request_free(a);
  tandem_request_free(b);
  tandem_request_t c = nullptr;
  EXPECT_EQ(tandem_ibroadcast(x, 4, TANDEM_FLOAT32, 5, &c), TANDEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c, nullptr);
  EXPECT_EQ(tandem_iallreduce(x, y, 4, TANDEM_FLOAT32, TANDEM_SUM, 1, 1, nullptr),
            TANDEM_ERR_INVALID_ARGUMENT);

  void* shared = nullptr;
  ASSERT_EQ(tandem_alloc_shared(1 << 20, &shared), TANDEM_SUCCESS) << tandem_last_error();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(shared) % 4096, 0u);
  EXPECT_EQ(tandem_alloc_shared(size_t{1} << 40, &shared), TANDEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tandem_last_error()).find("TANDEM_SHM_ARENA_BYTES"), std::string::npos);
  EXPECT_EQ(tandem_free_shared(shared), TANDEM_SUCCESS);
  EXPECT_EQ(tandem_free_shared(x), TANDEM_ERR_INVALID_ARGUMENT);

  EXPECT_EQ(tandem_finalize(), TANDEM_SUCCESS);
  EXPECT_EQ(tandem_finalize(), TANDEM_SUCCESS) << "safe twice";
  EXPECT_EQ(tandem_is_initialized(), 0);
  EXPECT_EQ(tandem_barrier(), TANDEM_ERR_NOT_INITIALIZED);
}

TEST(Api, BadEnvironmentIsAClearInitError) {
  clear_launch_environment();
  setenv("TANDEM_SHM_CHUNK_BYTES", "lots", 1);
  EXPECT_EQ(tandem_init(), TANDEM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tandem_last_error()).find("TANDEM_SHM_CHUNK_BYTES='lots'"),
            std::string::npos)
      << tandem_last_error();
  unsetenv("TANDEM_SHM_CHUNK_BYTES");
  EXPECT_EQ(tandem_is_initialized(), 0);
}

// ------------------------------------------------------------ forked jobs

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// Exit codes of a rank: 0 all checks passed, 10+k check k failed, 20+rc an
// API call failed with rc.
// ready_fd: where a rank writes one byte once it loops on the collective the
// victim's death must interrupt.
// node_of_rank: each rank's fake node (any order, any interleaving).
int job_rank(int rank, const std::vector<int>& node_of_rank, int victim, int ready_fd) {
  const int size = static_cast<int>(node_of_rank.size());
  const int node = node_of_rank[rank];
  setenv("TANDEM_RANK", std::to_string(rank).c_str(), 1);
  setenv("TANDEM_SIZE", std::to_string(size).c_str(), 1);
  setenv("TANDEM_NODE_NAME", ("fake-node-" + std::to_string(node)).c_str(), 1);
  if (tandem_init() != TANDEM_SUCCESS) return 20 + TANDEM_ERR_BOOTSTRAP;
  // Horovod's local rank: the index among this node's ranks, in rank order.
  int want_local_rank = 0, want_local_size = 0;
  for (int r = 0; r < size; ++r) {
    if (node_of_rank[r] != node) continue;
    if (r < rank) ++want_local_rank;
    ++want_local_size;
  }
  const int nodes = *std::max_element(node_of_rank.begin(), node_of_rank.end()) + 1;
  int cross = -1, local = -1, local_rank = -1;
  tandem_cross_size(&cross);
  tandem_local_size(&local);
  tandem_local_rank(&local_rank);
  if (cross != nodes || local != want_local_size || local_rank != want_local_rank) return 10;
  const size_t count = (1 << 20) + 3;
  std::vector<float> buf(count);
  for (size_t i = 0; i < count; ++i) buf[i] = static_cast<float>((rank + 1) * (i % 5));
  tandem_result_t rc =
      tandem_allreduce(buf.data(), buf.data(), count, TANDEM_FLOAT32, TANDEM_SUM, 1, 1);
  if (rc) return 20 + rc;
  const float ranks = size * (size + 1) / 2.0f;
  for (size_t i = 0; i < count; ++i)
    if (buf[i] != ranks * static_cast<float>(i % 5)) return 11;
  std::vector<int64_t> all(size * 3);
  int64_t mine[3] = {rank, rank * 10, rank * 100};
  if ((rc = tandem_allgather(mine, 3, all.data(), TANDEM_INT64))) return 20 + rc;
  for (int r = 0; r < size; ++r)
    if (all[r * 3 + 2] != r * 100) return 12;
  int64_t root_value = rank == size - 1 ? 4242 : 0;
  if ((rc = tandem_broadcast(&root_value, 1, TANDEM_INT64, size - 1))) return 20 + rc;
  if (root_value != 4242) return 13;
  if ((rc = tandem_barrier())) return 20 + rc;
  if (victim >= 0) {
    // Failure run: loop until the victim is killed; report the error code.
    if (::write(ready_fd, "r", 1) != 1) return 15;
    for (;;) {
      rc = tandem_allreduce(buf.data(), buf.data(), count, TANDEM_FLOAT32, TANDEM_MAX, 1, 1);
      if (rc) {
        const std::string msg = tandem_last_error();
        const bool names_victim = msg.find("rank " + std::to_string(victim)) != std::string::npos;
        std::fprintf(stderr, "rank %d: %s: %s\n", rank, tandem_result_name(rc), msg.c_str());
        return rc == TANDEM_ERR_PEER_LOST || rc == TANDEM_ERR_ABORTED ? (names_victim ? 0 : 14)
                                                                      : 20 + rc;
      }
    }
  }
  if ((rc = tandem_finalize())) return 20 + rc;
  return 0;
}

// Runs a job of forked ranks, rank r on fake node node_of_rank[r]; returns
// each rank's exit code (-1: hung).
std::vector<int> run_placed_job(const std::vector<int>& node_of_rank, int victim = -1) {
  const int size = static_cast<int>(node_of_rank.size());
  clear_launch_environment();
  const std::string addr = "127.0.0.1:" + std::to_string(free_port());
  setenv("TANDEM_RENDEZVOUS_ADDR", addr.c_str(), 1);
  setenv("TANDEM_RENDEZVOUS_TOKEN", "api-test-token-0123", 1);
  setenv("TANDEM_TIMEOUT", "60", 1);
  int ready[2];
  if (pipe(ready) != 0) std::abort();
  std::vector<pid_t> pids;
  for (int r = 0; r < size; ++r) {
    const pid_t pid = fork();
    if (pid == 0) _exit(job_rank(r, node_of_rank, victim, ready[1]));
    pids.push_back(pid);
  }
  close(ready[1]);
  clear_launch_environment();
  unsetenv("TANDEM_TIMEOUT");
  if (victim >= 0) {
    // Kill once every rank is in the failure loop (not at a fixed time: on
    // a loaded machine start-up can outlast any fixed delay, and the victim
    // would die in the bootstrap), then a little later so that it dies
    // mid-collective.
    int in_loop = 0;
    char byte;
    pollfd p{ready[0], POLLIN, 0};
    while (in_loop < size && poll(&p, 1, 60000) == 1 && ::read(ready[0], &byte, 1) == 1) ++in_loop;
    EXPECT_EQ(in_loop, size) << "not every rank reached the failure loop";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    kill(pids[victim], SIGKILL);
  }
  close(ready[0]);
  std::vector<int> codes(size, -1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  for (int r = 0; r < size; ++r) {
    int status = 0;
    while (waitpid(pids[r], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pids[r], SIGKILL);
        waitpid(pids[r], &status, 0);
        status = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    codes[r] =
        status == -1 ? -1 : (WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status));
  }
  return codes;
}

// Block placement: per_node[k] consecutive ranks on node k.
std::vector<int> run_job(const std::vector<int>& per_node, int victim = -1) {
  std::vector<int> node_of_rank;
  for (size_t k = 0; k < per_node.size(); ++k)
    node_of_rank.insert(node_of_rank.end(), per_node[k], static_cast<int>(k));
  return run_placed_job(node_of_rank, victim);
}

TEST(ApiJob, TwoNodesOfThreeOverTcp) {
  const auto codes = run_job({3, 3});
  for (size_t r = 0; r < codes.size(); ++r) EXPECT_EQ(codes[r], 0) << "rank " << r;
}

TEST(ApiJob, UnevenNodesOverTcp) {
  const auto codes = run_job({3, 1});
  for (size_t r = 0; r < codes.size(); ++r) EXPECT_EQ(codes[r], 0) << "rank " << r;
}

// Nodes whose ranks interleave (srun --distribution=cyclic, or arbitrary
// with a hostfile): the groups across nodes must still connect over TCP,
// and local ranks follow rank order on each node.
TEST(ApiJob, CyclicAndInterleavedPlacementsOverTcp) {
  for (const std::vector<int>& placement :
       {std::vector<int>{0, 1, 0, 1}, std::vector<int>{0, 1, 1, 0}, std::vector<int>{1, 0, 0},
        std::vector<int>{0, 1, 2, 2, 1, 0}}) {
    std::string name;
    for (int n : placement) name += std::to_string(n);
    const auto codes = run_placed_job(placement);
    for (size_t r = 0; r < codes.size(); ++r)
      EXPECT_EQ(codes[r], 0) << "placement " << name << ", rank " << r;
  }
}

TEST(ApiJob, OneNodeOfFour) {
  const auto codes = run_job({4});
  for (size_t r = 0; r < codes.size(); ++r) EXPECT_EQ(codes[r], 0) << "rank " << r;
}

// Kill a rank of the second node mid-allreduce: every survivor, on both
// nodes, fails promptly with PEER_LOST (or ABORTED). The victim's node peer
// (pidfd) names it. Ranks that hear of it through a relaying rank's closed
// connection prefer a local record of the cause but may name the relay
// (docs/engine.md); that includes the victim's cross-node partner (rank 1)
// when the failure reaches it in a node-local wait rather than in its own
// transfer with the victim (1 run in 5 here).
TEST(ApiJob, KilledRankFailsBothNodes) {
  const int victim = 3;
  const auto codes = run_job({2, 2}, victim);
  for (size_t r = 0; r < codes.size(); ++r) {
    if (static_cast<int>(r) == victim) continue;
    const bool direct = r == 2;
    EXPECT_TRUE(codes[r] == 0 || (!direct && codes[r] == 14))
        << "rank " << r << ": exit " << codes[r]
        << " (-1 hung, 14 error does not name the victim, 2x error code)";
  }
}

// init -> finalize -> init 50 times across fake nodes (shared memory inside
// a node, TCP and the wake relay between them, all rebuilt every session),
// rank 0 hosting the store as a launcher without tandem-run would have it:
// the ranks exec tests/unit/api/reinit_job (REINIT_JOB, set by meson). This
// covers the data path rebuilt every session across nodes; the stale-key
// hang needed a store that outlives the sessions (tandem-run's), which
// api-reinit-np2/3 and the bootstrap test cover.
int run_reinit_job(const std::vector<int>& per_node) {
  const char* job = std::getenv("REINIT_JOB");
  if (!job) return -2;
  int size = 0;
  for (int n : per_node) size += n;
  const std::string addr = "127.0.0.1:" + std::to_string(free_port());
  std::vector<pid_t> pids;
  for (int r = 0, node = 0, first = 0; r < size; ++r) {
    while (r >= first + per_node[node]) first += per_node[node++];
    const pid_t pid = fork();
    if (pid == 0) {
      clear_launch_environment();
      setenv("TANDEM_RENDEZVOUS_ADDR", addr.c_str(), 1);
      setenv("TANDEM_RENDEZVOUS_TOKEN", "api-reinit-token-42", 1);
      setenv("TANDEM_RANK", std::to_string(r).c_str(), 1);
      setenv("TANDEM_SIZE", std::to_string(size).c_str(), 1);
      setenv("TANDEM_NODE_NAME", ("fake-node-" + std::to_string(node)).c_str(), 1);
      execl(job, job, "50", static_cast<char*>(nullptr));
      _exit(127);
    }
    pids.push_back(pid);
  }
  int worst = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  for (pid_t pid : pids) {
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        for (pid_t p : pids) kill(p, SIGKILL);
        waitpid(pid, &status, 0);
        return -1;  // hung
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
    if (code != 0 && worst == 0) worst = code;
  }
  return worst;
}

TEST(ApiJob, JoinAndLeaveFiftyTimesAcrossTwoNodes) {
  EXPECT_EQ(run_reinit_job({2, 2}), 0) << "-1: hung, -2: REINIT_JOB not set, else a rank's exit";
}

TEST(ApiJob, JoinAndLeaveFiftyTimesOnThreeNodes) {
  EXPECT_EQ(run_reinit_job({1, 1, 1}), 0) << "-1: hung, -2: REINIT_JOB not set, else a rank's exit";
}

}  // namespace
