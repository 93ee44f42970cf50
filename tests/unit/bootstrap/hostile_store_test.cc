// The rendezvous store against hostile and broken peers (hostile_peers.h),
// while two real jobs of forked ranks bootstrap through two stores: every
// hostile connection is refused or dropped within the store's hello
// timeout, a rank of the other job that reaches this job's store ends with
// one clear error, and both jobs finish as if nobody had been there.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "bootstrap/from_environment.h"
#include "bootstrap/store_protocol.h"
#include "bootstrap/tcp_store_client.h"
#include "bootstrap/tcp_store_server.h"
#include "common/errors.h"
#include "forked_ranks.h"
#include "hostile_peers.h"

namespace tandem {
namespace {

using namespace std::chrono_literals;
using testing::HasSubstr;

const char* const kToken = "job-a-token-0123456789";
const char* const kOtherToken = "job-b-token-9876543210";
// Short, so that the silent and slow peers are cut within the test; the
// job's ranks send their HELLO as soon as they connect.
constexpr auto kHelloTimeout = 2500ms;

Bytes store_hello(const std::string& token) {
  store::Writer w(static_cast<uint8_t>(store::Op::kHello));
  w.str(token).u32(0).u32(2);
  return w.frame();
}

// The elastic service's HELLO (elastic/protocol.h: op 20, token, node,
// label, pid, order): a Tandem peer, of the other protocol.
Bytes elastic_hello(const std::string& token) {
  store::Writer w(20);
  w.str(token).str("node").str("node").u32(1).u64(0);
  return w.frame();
}

std::string healthy_rank(int rank) {
  auto b = bootstrap_from_environment();
  if (b->identity().rank != rank || b->identity().size != 2)
    return "rank " + std::to_string(b->identity().rank) + " of " +
           std::to_string(b->identity().size) + ", expected " + std::to_string(rank) + " of 2";
  const std::string mine = "blob of rank " + std::to_string(rank);
  auto all = b->allgather(Bytes(mine.begin(), mine.end()), 20s);
  for (int r = 0; r < 2; ++r)
    if (std::string(all[r].begin(), all[r].end()) != "blob of rank " + std::to_string(r))
      return "allgather: wrong blob from rank " + std::to_string(r);
  b->barrier(20s);
  return "";
}

std::map<std::string, std::string> rank_env(uint16_t port, const std::string& token, int rank) {
  return {{"TANDEM_RENDEZVOUS_ADDR", "127.0.0.1:" + std::to_string(port)},
          {"TANDEM_RENDEZVOUS_TOKEN", token},
          {"TANDEM_RENDEZVOUS_SERVE", "external"},
          {"TANDEM_RANK", std::to_string(rank)},
          {"TANDEM_SIZE", "2"},
          {"TANDEM_BOOTSTRAP_TIMEOUT", "20000"}};
}

TEST(HostileStorePeers, AreRefusedWhileTwoJobsBootstrap) {
  for (const char* v :
       {"TANDEM_BOOTSTRAP", "TANDEM_RENDEZVOUS_ADDR", "TANDEM_RENDEZVOUS_TOKEN",
        "TANDEM_RENDEZVOUS_SERVE", "TANDEM_RANK", "TANDEM_SIZE", "TANDEM_NODE_NAME",
        "TANDEM_JOB_ID", "PMIX_RANK", "PMIX_NAMESPACE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE"})
    unsetenv(v);
  TcpStoreServer store(kToken, 0, kHelloTimeout);
  TcpStoreServer other(kOtherToken, 0, kHelloTimeout);
  auto hostile =
      test::open_hostile(store.port(), store_hello, kToken, elastic_hello(kToken), kOtherToken);
  // With the right token, but one byte a second: still cut at the timeout.
  test::Slowloris slow(store.port(), store_hello(kToken));

  // Job A (ranks 0, 1) on this store, job B (2, 3) on the other one, and a
  // rank of job B (4) that was given job A's address.
  std::vector<test::RankSpec> specs(5);
  for (int r = 0; r < 2; ++r) specs[r].env = rank_env(store.port(), kToken, r);
  for (int r = 0; r < 2; ++r) specs[2 + r].env = rank_env(other.port(), kOtherToken, r);
  specs[4].env = rank_env(store.port(), kOtherToken, 1);
  const auto outcomes = test::run_forked(specs, [](int r) -> std::string {
    if (r < 4) return healthy_rank(r % 2);
    try {
      bootstrap_from_environment();
      return "job B's rank joined job A's store";
    } catch (const BootstrapError& e) {
      const std::string what = e.what();
      if (what.find("refused rank 1: wrong job token") == std::string::npos ||
          what.find("TANDEM_RENDEZVOUS_TOKEN must be the same") == std::string::npos)
        return "unclear error: " + what;
      return "";
    }
  });
  for (const auto& o : outcomes)
    EXPECT_TRUE(o.exited && o.code == 0) << "rank " << o.rank << ": " << o.message;

  for (const auto& h : hostile)
    EXPECT_THAT(test::answer_of(h.fd.get(), 20s), HasSubstr(h.expected)) << h.kind;
  EXPECT_THAT(slow.answer(), HasSubstr("rejected: no complete HELLO within 2500 ms"))
      << "slowloris";

  // The store still serves: a well-behaved client of job A after all that.
  TcpStoreClient late(HostPort{"127.0.0.1", store.port()}, kToken, 0, 2, Clock::now() + 5s);
  late.set("late", Bytes{1, 2, 3}, Clock::now() + 5s);
  EXPECT_EQ(late.get("late", Clock::now() + 5s).value_or(Bytes{}), (Bytes{1, 2, 3}));
}

}  // namespace
}  // namespace tandem
