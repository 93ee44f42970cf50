// The TCP rendezvous store and bootstrap_from_environment, with ranks as
// forked processes that find their bootstrap from the environment exactly as
// a launched program would.
#include <csignal>
#include <cstdlib>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/from_environment.h"
#include "bootstrap/store_protocol.h"
#include "bootstrap/tcp_bootstrap.h"
#include "bootstrap/tcp_store_client.h"
#include "bootstrap/tcp_store_server.h"
#include "common/errors.h"
#include "forked_ranks.h"

namespace tandem {
namespace {

using test::RankSpec;
using test::run_forked;
using namespace std::chrono_literals;

const char* const kToken = "test-token-0123456789";

// Clears every variable bootstrap_from_environment reads, so that the
// machine's environment cannot leak into a test.
void clear_bootstrap_env() {
  for (const char* v : {"TANDEM_BOOTSTRAP", "TANDEM_RENDEZVOUS_ADDR", "TANDEM_RENDEZVOUS_TOKEN",
                        "TANDEM_RENDEZVOUS_SERVE", "TANDEM_RANK", "TANDEM_SIZE", "TANDEM_NODE_NAME",
                        "TANDEM_JOB_ID", "TANDEM_BOOTSTRAP_TIMEOUT", "PMIX_RANK", "PMIX_NAMESPACE",
                        "PMI_SIZE", "OMPI_COMM_WORLD_SIZE"})
    unsetenv(v);
}

// The receiving side of the frame stream (the store's server, the elastic
// service and client): whole frames are handed over in order and dropped, a
// partial one waits for more bytes, the handler can stop the reading, and a
// bad length ends it.
TEST(StoreFrames, TakeFramesSplitsWholeFramesOnly) {
  Bytes in;
  for (const char* word : {"one", "three"}) {
    store::Writer w(7);
    w.str(word);
    const Bytes& f = w.frame();
    in.insert(in.end(), f.begin(), f.end());
  }
  const Bytes partial(in.begin(), in.end() - 2);
  std::vector<std::string> seen;
  auto collect = [&](const uint8_t* p, uint32_t n) {
    store::Reader r(p, n);
    EXPECT_EQ(r.u8(), 7);
    seen.push_back(r.str());
    EXPECT_TRUE(r.done());
    return true;
  };
  Bytes rest = partial;
  ASSERT_TRUE(store::take_frames(rest, collect));
  EXPECT_EQ(seen, std::vector<std::string>{"one"});
  EXPECT_EQ(rest, Bytes(partial.begin() + 12, partial.end())) << "the partial frame stays";
  rest.insert(rest.end(), in.end() - 2, in.end());
  ASSERT_TRUE(store::take_frames(rest, collect));
  EXPECT_EQ(seen, (std::vector<std::string>{"one", "three"}));
  EXPECT_TRUE(rest.empty());

  rest = in;
  int calls = 0;
  ASSERT_TRUE(store::take_frames(rest, [&](const uint8_t*, uint32_t) { return ++calls < 1; }));
  EXPECT_EQ(calls, 1) << "the handler stops the reading";
  EXPECT_EQ(rest.size(), in.size() - 12) << "only the frame handed over is dropped";

  for (uint32_t bad : {0u, store::kMaxFrame + 1}) {
    Bytes wrong = {uint8_t(bad), uint8_t(bad >> 8), uint8_t(bad >> 16), uint8_t(bad >> 24), 1};
    EXPECT_FALSE(store::take_frames(wrong, collect)) << bad;
  }
}

class TcpBootstrapTest : public ::testing::Test {
 protected:
  void SetUp() override { clear_bootstrap_env(); }
  void TearDown() override { clear_bootstrap_env(); }
};

std::vector<RankSpec> world(int size, int port, bool external) {
  std::vector<RankSpec> specs(size);
  for (int r = 0; r < size; ++r) {
    auto& e = specs[r].env;
    e["TANDEM_RENDEZVOUS_ADDR"] = "127.0.0.1:" + std::to_string(port);
    e["TANDEM_RENDEZVOUS_TOKEN"] = kToken;
    e["TANDEM_RANK"] = std::to_string(r);
    e["TANDEM_SIZE"] = std::to_string(size);
    if (external) e["TANDEM_RENDEZVOUS_SERVE"] = "external";
  }
  return specs;
}

std::string blob_of(int rank, int round) {
  // Rank 1 contributes an empty blob in round 1: empty values must work too.
  if (rank == 1 && round == 1) return "";
  return "rank" + std::to_string(rank) + "-round" + std::to_string(round) +
         std::string(rank * 100, 'x');
}

Bytes bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }
std::string str(const Bytes& b) { return std::string(b.begin(), b.end()); }

#define CHECK_EQ_MSG(a, b, what)                                                          \
  do {                                                                                    \
    if (!((a) == (b)))                                                                    \
      return std::string(what) + ": got " + ::testing::PrintToString(a) + ", expected " + \
             ::testing::PrintToString(b);                                                 \
  } while (0)

// What every rank of a healthy job checks: its identity on one node, three
// allgathers, a broadcast, a barrier, and that everyone has the same job id.
std::string healthy_rank(int rank, int size) {
  auto b = bootstrap_from_environment();
  const Identity& id = b->identity();
  CHECK_EQ_MSG(id.rank, rank, "rank");
  CHECK_EQ_MSG(id.size, size, "size");
  CHECK_EQ_MSG(id.local_rank, rank, "local_rank");
  CHECK_EQ_MSG(id.local_size, size, "local_size");
  CHECK_EQ_MSG(id.cross_rank, 0, "cross_rank");
  CHECK_EQ_MSG(id.cross_size, 1, "cross_size");
  CHECK_EQ_MSG(id.node_of_rank, std::vector<int>(size, 0), "node_of_rank");
  if (id.job_id.empty()) return "empty job id";
  for (int round = 0; round < 3; ++round) {
    auto all = b->allgather(bytes(blob_of(rank, round)), 20s);
    CHECK_EQ_MSG(all.size(), static_cast<size_t>(size), "allgather size");
    for (int r = 0; r < size; ++r) CHECK_EQ_MSG(str(all[r]), blob_of(r, round), "allgather blob");
  }
  const int root = size - 1;
  auto v = b->broadcast(rank == root ? bytes("from the root") : bytes("not me"), root, 20s);
  CHECK_EQ_MSG(str(v), std::string("from the root"), "broadcast");
  b->barrier(20s);
  auto ids = b->allgather(bytes(id.job_id), 20s);
  for (int r = 0; r < size; ++r)
    CHECK_EQ_MSG(str(ids[r]), id.job_id, "job id of rank " + std::to_string(r));
  return "";
}

void expect_all_ok(const std::vector<test::RankOutcome>& outcomes) {
  for (const auto& o : outcomes) {
    EXPECT_TRUE(o.exited && o.code == 0) << "rank " << o.rank << ": " << o.message;
  }
}

TEST_F(TcpBootstrapTest, ExternalStoreWorldSizesOneToEight) {
  for (int size = 1; size <= 8; ++size) {
    SCOPED_TRACE("size " + std::to_string(size));
    TcpStoreServer job_store(kToken);  // one store per job, as tandem-run runs it
    expect_all_ok(run_forked(world(size, job_store.port(), true),
                             [size](int r) { return healthy_rank(r, size); }));
  }
}

TEST_F(TcpBootstrapTest, RankZeroHostsTheStore) {
  const int size = 4;
  expect_all_ok(run_forked(world(size, test::free_port(), false),
                           [](int r) { return healthy_rank(r, size); }));
}

// A process that leaves the job and joins again (tandem_finalize, then
// tandem_init) must read nothing an earlier session left in the store.
// Session s runs s+1 allgathers on every rank, then rank 0 starts one more
// and gives up on it: its key stays behind, as the keys of a session's last
// allgather always do. Session s+1 runs one allgather more than s, so every
// rank arrives at that operation's number again, mostly before rank 0 (which
// waited out its timeout), and must see this session's blob. Without
// per-session keys they read the stale one (or the store refused the
// returning rank as a duplicate while its old connection was still open).
std::string rejoining_rank(int rank, int size, int sessions) {
  auto blob = [](int s, int op, int r) {
    return "session" + std::to_string(s) + "-op" + std::to_string(op) + "-rank" + std::to_string(r);
  };
  for (int s = 0; s < sessions; ++s) {
    auto b = bootstrap_from_environment();
    for (int op = 0; op <= s; ++op) {
      auto all = b->allgather(bytes(blob(s, op, rank)), 20s);
      for (int r = 0; r < size; ++r)
        CHECK_EQ_MSG(str(all[r]), blob(s, op, r), "rank " + std::to_string(r) + "'s blob");
    }
    if (rank == 0) {
      try {
        b->allgather(bytes("left over from session " + std::to_string(s)), 300ms);
        return "an allgather no other rank joined completed";
      } catch (const TimeoutError&) {}
    }
  }
  return "";
}

TEST_F(TcpBootstrapTest, JoiningAgainReadsNothingOfTheLastSession) {
  const int size = 3, sessions = 6;
  {
    SCOPED_TRACE("external store");
    TcpStoreServer store(kToken);
    expect_all_ok(run_forked(world(size, store.port(), true),
                             [&](int r) { return rejoining_rank(r, size, sessions); }));
  }
  {
    SCOPED_TRACE("rank 0 hosts the store");
    expect_all_ok(run_forked(world(size, test::free_port(), false),
                             [&](int r) { return rejoining_rank(r, size, sessions); }));
  }
}

TEST_F(TcpBootstrapTest, JobIdsDifferBetweenJobs) {
  std::string first, second;
  for (std::string* out : {&first, &second}) {
    TcpStoreServer store(kToken);
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    auto outcomes = run_forked(world(1, store.port(), true), [&](int) {
      auto b = bootstrap_from_environment();
      (void)!write(p[1], b->identity().job_id.data(), b->identity().job_id.size());
      return std::string();
    });
    close(p[1]);
    char buf[128] = {};
    ASSERT_GT(read(p[0], buf, sizeof(buf) - 1), 0);
    close(p[0]);
    *out = buf;
    expect_all_ok(outcomes);
  }
  EXPECT_NE(first, second);
}

TEST_F(TcpBootstrapTest, NodesComeFromNodeNames) {
  // Six ranks on three "hosts" given out of order: nodes are numbered by
  // their lowest rank (a=0, b=1, c=2), local ranks follow rank order.
  const std::vector<std::string> names = {"a", "b", "a", "c", "b", "a"};
  const std::vector<int> node = {0, 1, 0, 2, 1, 0};
  const std::vector<int> local = {0, 0, 1, 0, 1, 2};
  const std::vector<int> local_size = {3, 2, 3, 1, 2, 3};
  TcpStoreServer store(kToken);
  auto specs = world(6, store.port(), true);
  for (int r = 0; r < 6; ++r) specs[r].env["TANDEM_NODE_NAME"] = names[r];
  expect_all_ok(run_forked(specs, [&](int r) {
    auto b = bootstrap_from_environment();
    const Identity& id = b->identity();
    CHECK_EQ_MSG(id.node_of_rank, node, "node_of_rank");
    CHECK_EQ_MSG(id.cross_rank, node[r], "cross_rank");
    CHECK_EQ_MSG(id.cross_size, 3, "cross_size");
    CHECK_EQ_MSG(id.local_rank, local[r], "local_rank");
    CHECK_EQ_MSG(id.local_size, local_size[r], "local_size");
    return std::string();
  }));
}

// Expects every launched rank to fail with exception E whose message holds
// `needle`.
template <typename E>
std::string expect_throw(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
  } catch (const E& e) {
    if (std::string(e.what()).find(needle) == std::string::npos)
      return std::string("message lacks '") + needle + "': " + e.what();
    return "";
  } catch (const std::exception& e) { return std::string("wrong exception type: ") + e.what(); }
  return "no exception";
}

TEST_F(TcpBootstrapTest, NeverLaunchedRankIsNamedInTheTimeout) {
  TcpStoreServer store(kToken);
  auto specs = world(3, store.port(), true);
  for (auto& s : specs) s.env["TANDEM_BOOTSTRAP_TIMEOUT"] = "0.5";
  auto outcomes =
      run_forked(specs,
                 [](int) {
                   return expect_throw<TimeoutError>([] { bootstrap_from_environment(); },
                                                     "rank 2 did not arrive within 500 ms");
                 },
                 60s, {0, 1});
  expect_all_ok(outcomes);
}

TEST_F(TcpBootstrapTest, DeadRankIsNamedPromptly) {
  TcpStoreServer store(kToken);
  expect_all_ok(run_forked(
      world(3, store.port(), true),
      [](int r) {
        auto b = bootstrap_from_environment();
        if (r == 2) _exit(0);  // dies without leaving: no BYE reaches the store
        // The barrier's own timeout is long: the error must come from the store
        // seeing rank 2 drop, not from the timeout.
        auto start = std::chrono::steady_clock::now();
        std::string msg = expect_throw<PeerLostError>([&] { b->barrier(60s); }, "rank 2 dropped");
        if (!msg.empty()) return msg;
        if (std::chrono::steady_clock::now() - start > 30s) return std::string("took past 30 s");
        return std::string();
      },
      60s));
}

TEST_F(TcpBootstrapTest, StoppedRankIsNamedAtTheTimeout) {
  TcpStoreServer store(kToken);
  auto outcomes = run_forked(world(3, store.port(), true), [](int r) {
    auto b = bootstrap_from_environment();
    if (r == 1) raise(SIGSTOP);  // the harness kills it once the others are done
    return expect_throw<TimeoutError>([&] { b->barrier(500ms); }, "rank 1 did not arrive");
  });
  for (const auto& o : outcomes) {
    if (o.rank == 1) EXPECT_FALSE(o.exited) << "the stopped rank should have been killed";
    else EXPECT_TRUE(o.exited && o.code == 0) << "rank " << o.rank << ": " << o.message;
  }
}

TEST_F(TcpBootstrapTest, StoreRefusesWrongTokenAndGarbageWhileJobRuns) {
  TcpStoreServer store(kToken);
  HostPort addr{"127.0.0.1", store.port()};
  // A raw connection that sends junk, left open while the job runs.
  int raw = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(store.port());
  ASSERT_EQ(connect(raw, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  const char junk[] = "\x10\x00\x00\x00GET / HTTP/1.0\r\n";
  ASSERT_GT(send(raw, junk, sizeof(junk), 0), 0);
  try {
    TcpStoreClient intruder(addr, "not-the-token", 0, 2, Clock::now() + 5s);
    ADD_FAILURE() << "a wrong token was accepted";
  } catch (const BootstrapError& e) {
    EXPECT_NE(std::string(e.what()).find("TANDEM_RENDEZVOUS_TOKEN"), std::string::npos) << e.what();
  }
  expect_all_ok(run_forked(world(2, store.port(), true), [](int r) { return healthy_rank(r, 2); }));
  close(raw);
}

TEST_F(TcpBootstrapTest, StoreRefusesDuplicateRankAndOtherSize) {
  TcpStoreServer store(kToken);
  HostPort addr{"127.0.0.1", store.port()};
  TcpStoreClient first(addr, kToken, 0, 2, Clock::now() + 5s);
  EXPECT_THROW(
      {
        try {
          TcpStoreClient twin(addr, kToken, 0, 2, Clock::now() + 5s);
        } catch (const BootstrapError& e) {
          EXPECT_NE(std::string(e.what()).find("rank 0 has already joined"), std::string::npos)
              << e.what();
          throw;
        }
      },
      BootstrapError);
  EXPECT_THROW(
      {
        try {
          TcpStoreClient other(addr, kToken, 1, 3, Clock::now() + 5s);
        } catch (const BootstrapError& e) {
          EXPECT_NE(std::string(e.what()).find("size 3 differs from the job's size 2"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      BootstrapError);
}

TEST_F(TcpBootstrapTest, GetWaitsForALaterSetAndTimesOutOtherwise) {
  TcpStoreServer store(kToken);
  HostPort addr{"127.0.0.1", store.port()};
  TcpStoreClient reader(addr, kToken, 0, 2, Clock::now() + 5s);
  TcpStoreClient writer(addr, kToken, 1, 2, Clock::now() + 5s);
  EXPECT_FALSE(reader.get("k", Clock::now() + 200ms).has_value());
  std::thread later([&] {
    std::this_thread::sleep_for(100ms);
    writer.set("k", bytes("v"), Clock::now() + 5s);
  });
  auto v = reader.get("k", Clock::now() + 20s);
  later.join();
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(str(*v), "v");
  reader.del("k");
  EXPECT_FALSE(reader.get("k", Clock::now()).has_value());
}

// GATHER answers every value of a prefix in one frame, once the last is
// set, in index order; keys under the prefix beyond the count, or deleted
// ones, do not count; a gather that misses one at its deadline answers
// nothing.
TEST_F(TcpBootstrapTest, GatherWaitsForEveryKeyOfThePrefix) {
  TcpStoreServer store(kToken);
  HostPort addr{"127.0.0.1", store.port()};
  TcpStoreClient reader(addr, kToken, 0, 2, Clock::now() + 5s);
  TcpStoreClient writer(addr, kToken, 1, 2, Clock::now() + 5s);
  writer.set("s0/ag/1/2", bytes("two"), Clock::now() + 5s);
  writer.set("s0/ag/1/7", bytes("seven"), Clock::now() + 5s);
  writer.set("s0/ag/10/0", bytes("other prefix"), Clock::now() + 5s);
  EXPECT_FALSE(reader.gather("s0/ag/1/", 3, Clock::now() + 200ms).has_value());
  writer.set("s0/ag/1/0", bytes("zero"), Clock::now() + 5s);
  writer.set("s0/ag/1/1", bytes("gone"), Clock::now() + 5s);
  writer.del("s0/ag/1/1");
  // DEL has no answer; a request after it on the same connection does.
  EXPECT_FALSE(writer.get("s0/ag/1/1", Clock::now()).has_value());
  std::thread later([&] {
    std::this_thread::sleep_for(100ms);
    writer.set("s0/ag/1/1", bytes("one"), Clock::now() + 5s);
  });
  auto v = reader.gather("s0/ag/1/", 3, Clock::now() + 20s);
  later.join();
  ASSERT_TRUE(v.has_value());
  ASSERT_EQ(v->size(), 3u);
  EXPECT_EQ(str((*v)[0]), "zero");
  EXPECT_EQ(str((*v)[1]), "one");
  EXPECT_EQ(str((*v)[2]), "two");
}

// An allgather is one SET, one GATHER and one DEL (of the last one's key)
// per rank: five more allgathers at 8 ranks cost the store 5 x 3 x 8
// requests (it was 5 x (1 + 8 + 1) x 8 with a GET per rank and value: the
// one server thread answered N^2 requests, most of a large job's start-up).
std::string gathering_rank(int rank, int size, int rounds) {
  auto b = bootstrap_from_environment();
  for (int round = 0; round < rounds; ++round) {
    auto all = b->allgather(bytes(blob_of(rank, round)), 20s);
    for (int r = 0; r < size; ++r) CHECK_EQ_MSG(str(all[r]), blob_of(r, round), "allgather blob");
  }
  return "";
}

TEST_F(TcpBootstrapTest, AnAllgatherCostsThreeRequestsPerRank) {
  const int size = 8;
  uint64_t requests[2];
  for (int k = 0; k < 2; ++k) {
    TcpStoreServer store(kToken);
    expect_all_ok(run_forked(world(size, store.port(), true),
                             [k](int r) { return gathering_rank(r, size, 1 + 5 * k); }));
    requests[k] = store.traffic().requests;
  }
  EXPECT_EQ(requests[1] - requests[0], 5u * 3 * size);
}

TEST_F(TcpBootstrapTest, DeadStoreIsNamed) {
  auto store = std::make_unique<TcpStoreServer>(kToken);
  TcpBootstrap::Options o;
  o.addr = HostPort{"127.0.0.1", store->port()};
  o.token = kToken;
  o.node_name = "n";
  o.timeout = 5s;
  TcpBootstrap b(o);
  store.reset();
  try {
    b.barrier(5s);
    ADD_FAILURE() << "barrier succeeded without a store";
  } catch (const BootstrapError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "rendezvous store at 127.0.0.1:" + std::to_string(o.addr.port) + " is gone"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(TcpBootstrapTest, UnreachableStoreIsNamedAfterTheTimeout) {
  const int port = test::free_port();
  setenv("TANDEM_RENDEZVOUS_ADDR", ("127.0.0.1:" + std::to_string(port)).c_str(), 1);
  setenv("TANDEM_RENDEZVOUS_TOKEN", kToken, 1);
  setenv("TANDEM_RENDEZVOUS_SERVE", "external", 1);
  setenv("TANDEM_RANK", "1", 1);
  setenv("TANDEM_SIZE", "2", 1);
  setenv("TANDEM_BOOTSTRAP_TIMEOUT", "0.3", 1);
  EXPECT_EQ(expect_throw<BootstrapError>(
                [] { bootstrap_from_environment(); },
                "could not reach the rendezvous store at 127.0.0.1:" + std::to_string(port)),
            "");
}

TEST_F(TcpBootstrapTest, RankZeroOnABusyPortSaysSo) {
  TcpStoreServer busy(kToken);  // holds the port rank 0 is told to serve on
  setenv("TANDEM_RENDEZVOUS_ADDR", ("127.0.0.1:" + std::to_string(busy.port())).c_str(), 1);
  setenv("TANDEM_RENDEZVOUS_TOKEN", kToken, 1);
  setenv("TANDEM_RANK", "0", 1);
  setenv("TANDEM_SIZE", "2", 1);
  EXPECT_EQ(expect_throw<BootstrapError>([] { bootstrap_from_environment(); },
                                         "rank 0 cannot run the rendezvous store"),
            "");
}

TEST_F(TcpBootstrapTest, NothingSetIsAWorldOfOne) {
  auto b = bootstrap_from_environment();
  EXPECT_EQ(b->identity().rank, 0);
  EXPECT_EQ(b->identity().size, 1);
  EXPECT_EQ(b->identity().local_size, 1);
  EXPECT_EQ(b->identity().cross_size, 1);
  EXPECT_EQ(b->identity().node_of_rank, std::vector<int>{0});
  EXPECT_FALSE(b->identity().job_id.empty());
  auto all = b->allgather(bytes("me"), 1s);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(str(all[0]), "me");
  EXPECT_EQ(str(b->broadcast(bytes("x"), 0, 1s)), "x");
}

// A launcher of several processes without PMIx (MPICH's hydra sets PMI_SIZE,
// an Open MPI without its PMIx server OMPI_COMM_WORLD_SIZE): one error that
// names the variable and what Tandem joins through, never a world of one.
TEST_F(TcpBootstrapTest, ALauncherWithoutPmixIsNamed) {
  for (const char* var : {"PMI_SIZE", "OMPI_COMM_WORLD_SIZE"}) {
    setenv(var, "4", 1);
    EXPECT_EQ(expect_throw<BootstrapError>([] { bootstrap_from_environment(); },
                                           std::string(var) + "=4 is set, PMIX_RANK and "
                                                              "TANDEM_RENDEZVOUS_ADDR are not"),
              "");
    EXPECT_EQ(expect_throw<BootstrapError>([] { bootstrap_from_environment(); },
                                           "TANDEM_BOOTSTRAP=single"),
              "");
    unsetenv(var);
  }
  // One process of such a launcher is a world of one, as before.
  setenv("PMI_SIZE", "1", 1);
  EXPECT_EQ(bootstrap_from_environment()->identity().size, 1);
  unsetenv("PMI_SIZE");
}

struct BadEnv {
  std::map<std::string, std::string> env;
  std::string needle;
};

class BadEnvironmentTest : public TcpBootstrapTest, public ::testing::WithParamInterface<BadEnv> {};

TEST_P(BadEnvironmentTest, IsAnErrorNamingTheVariableAndValue) {
  std::map<std::string, std::string> env = {{"TANDEM_RENDEZVOUS_ADDR", "127.0.0.1:1"},
                                            {"TANDEM_RENDEZVOUS_TOKEN", kToken},
                                            {"TANDEM_RANK", "0"},
                                            {"TANDEM_SIZE", "2"},
                                            {"TANDEM_RENDEZVOUS_SERVE", "external"},
                                            {"TANDEM_BOOTSTRAP_TIMEOUT", "0.2"}};
  for (const auto& kv : GetParam().env) env[kv.first] = kv.second;
  for (const auto& kv : env)
    if (kv.second == "<unset>") unsetenv(kv.first.c_str());
    else setenv(kv.first.c_str(), kv.second.c_str(), 1);
  EXPECT_EQ(expect_throw<BootstrapError>([] { bootstrap_from_environment(); }, GetParam().needle),
            "");
}

INSTANTIATE_TEST_SUITE_P(
    Values, BadEnvironmentTest,
    ::testing::Values(
        BadEnv{{{"TANDEM_BOOTSTRAP_TIMEOUT", "abc"}}, "TANDEM_BOOTSTRAP_TIMEOUT='abc'"},
        BadEnv{{{"TANDEM_BOOTSTRAP_TIMEOUT", "0"}}, "TANDEM_BOOTSTRAP_TIMEOUT='0'"},
        BadEnv{{{"TANDEM_BOOTSTRAP_TIMEOUT", "10s"}}, "TANDEM_BOOTSTRAP_TIMEOUT='10s'"},
        BadEnv{{{"TANDEM_SIZE", "four"}}, "TANDEM_SIZE='four'"},
        BadEnv{{{"TANDEM_SIZE", "0"}}, "TANDEM_SIZE='0'"},
        BadEnv{{{"TANDEM_RANK", "-1"}}, "TANDEM_RANK='-1'"},
        BadEnv{{{"TANDEM_RANK", "2"}}, "TANDEM_RANK=2 is not below TANDEM_SIZE=2"},
        BadEnv{{{"TANDEM_RENDEZVOUS_ADDR", "node01"}},
               "TANDEM_RENDEZVOUS_ADDR='node01' has no port"},
        BadEnv{{{"TANDEM_RENDEZVOUS_ADDR", "node01:99999"}},
               "TANDEM_RENDEZVOUS_ADDR='node01:99999'"},
        BadEnv{{{"TANDEM_RENDEZVOUS_TOKEN", "<unset>"}}, "not set: TANDEM_RENDEZVOUS_TOKEN"},
        BadEnv{{{"TANDEM_RENDEZVOUS_ADDR", "<unset>"}}, "not set: TANDEM_RENDEZVOUS_ADDR"},
        BadEnv{{{"TANDEM_RENDEZVOUS_TOKEN", "short"}}, "TANDEM_RENDEZVOUS_TOKEN is shorter"},
        BadEnv{{{"TANDEM_RENDEZVOUS_SERVE", "me"}}, "TANDEM_RENDEZVOUS_SERVE='me'"},
        BadEnv{{{"TANDEM_JOB_ID", "a/b"}}, "TANDEM_JOB_ID='a/b'"},
        BadEnv{{{"TANDEM_BOOTSTRAP", "mpi"}}, "TANDEM_BOOTSTRAP='mpi'"}));

}  // namespace
}  // namespace tandem
