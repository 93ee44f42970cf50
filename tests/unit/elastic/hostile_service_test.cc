// The elastic membership service against hostile and broken peers
// (tests/unit/bootstrap/hostile_peers.h), while two real elastic jobs of
// forked ranks join through two services: every hostile connection is
// refused or dropped within the service's hello timeout, a process of the
// other job that reaches this job's service ends with one clear error, and
// both jobs form their generation and exchange keys as if nobody had been
// there.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "bootstrap/store_protocol.h"
#include "common/errors.h"
#include "elastic/client.h"
#include "elastic/protocol.h"
#include "elastic/service.h"
#include "forked_ranks.h"
#include "hostile_peers.h"

namespace tandem::elastic {
namespace {

using namespace std::chrono_literals;
using testing::HasSubstr;

const char* const kToken = "elastic-a-token-0123456789";
const char* const kOtherToken = "elastic-b-token-9876543210";

Bytes service_hello(const std::string& token) {
  store::Writer w(static_cast<uint8_t>(Op::kHello));
  w.str(token).str("node").str("node").u32(1).u64(0);
  return w.frame();
}

// The rendezvous store's HELLO: a Tandem peer, of the other protocol.
Bytes store_hello(const std::string& token) {
  store::Writer w(static_cast<uint8_t>(store::Op::kHello));
  w.str(token).u32(0).u32(2);
  return w.frame();
}

ServiceSettings settings(const std::string& token, int expected) {
  ServiceSettings s;
  s.token = token;
  s.expected = expected;
  s.join_timeout = 20s;
  s.elastic_timeout = 20s;
  // Short, so that the silent and slow peers are cut within the test; the
  // job's processes send their HELLO as soon as they connect.
  s.hello_timeout = 2500ms;
  return s;
}

// One process of a healthy job of `size`: joins generation 0, sees every
// rank's key, and is done.
std::string healthy_process(int size) {
  ElasticClient& c = ElasticClient::instance();
  const JoinAnswer a = c.join(
      Bytes{},
      [](const std::vector<ProbeTarget>&, std::chrono::milliseconds, void*) {
        return std::vector<uint32_t>{};
      },
      nullptr);
  if (a.kind != JoinAnswer::kAssigned) return "not assigned: " + a.message;
  if (a.assignment.size != size)
    return "a generation of " + std::to_string(a.assignment.size) + ", expected " +
           std::to_string(size);
  const std::string prefix = "g" + std::to_string(a.assignment.generation) + "/test/";
  const int rank = a.assignment.rank;
  c.set(prefix + std::to_string(rank), Bytes{uint8_t(rank)}, Clock::now() + 10s);
  for (int r = 0; r < size; ++r) {
    const auto v = c.get(prefix + std::to_string(r), Clock::now() + 10s);
    if (!v || *v != Bytes{uint8_t(r)}) return "no key of rank " + std::to_string(r);
  }
  c.done();
  return "";
}

std::map<std::string, std::string> process_env(uint16_t port, const std::string& token) {
  return {{"TANDEM_ELASTIC_ADDR", "127.0.0.1:" + std::to_string(port)},
          {"TANDEM_ELASTIC_TOKEN", token},
          {"TANDEM_NODE_NAME", "node"},
          {"TANDEM_BOOTSTRAP_TIMEOUT", "20000"}};
}

TEST(HostileServicePeers, AreRefusedWhileTwoJobsJoin) {
  for (const char* v : {"TANDEM_ELASTIC_ADDR", "TANDEM_ELASTIC_TOKEN", "TANDEM_ELASTIC_LABEL",
                        "TANDEM_ELASTIC_ORDER", "TANDEM_NODE_NAME"})
    unsetenv(v);
  MembershipService service(settings(kToken, 2));
  MembershipService other(settings(kOtherToken, 1));
  auto hostile =
      test::open_hostile(service.port(), service_hello, kToken, store_hello(kToken), kOtherToken);
  // With the right token, but one byte a second: still cut at the timeout.
  test::Slowloris slow(service.port(), service_hello(kToken));

  // Job A (processes 0, 1) on this service, job B (2) on the other one, and
  // a process of job B (3) that was given job A's address.
  std::vector<test::RankSpec> specs(4);
  for (int r = 0; r < 2; ++r) specs[r].env = process_env(service.port(), kToken);
  specs[2].env = process_env(other.port(), kOtherToken);
  specs[3].env = process_env(service.port(), kOtherToken);
  const auto outcomes = test::run_forked(specs, [](int r) -> std::string {
    if (r < 3) return healthy_process(r < 2 ? 2 : 1);
    try {
      ElasticClient::instance();
      return "job B's process joined job A's service";
    } catch (const BootstrapError& e) {
      const std::string what = e.what();
      if (what.find("refused this process: wrong job token") == std::string::npos ||
          what.find("TANDEM_ELASTIC_TOKEN must be the one the launcher set") == std::string::npos)
        return "unclear error: " + what;
      return "";
    }
  });
  for (const auto& o : outcomes)
    EXPECT_TRUE(o.exited && o.code == 0) << "process " << o.rank << ": " << o.message;

  for (const auto& h : hostile)
    EXPECT_THAT(test::answer_of(h.fd.get(), 20s), HasSubstr(h.expected)) << h.kind;
  EXPECT_THAT(slow.answer(), HasSubstr("rejected: no complete HELLO within 2500 ms"))
      << "slowloris";
  EXPECT_EQ(service.summary().generations, 1u);
  EXPECT_EQ(service.summary().size, 2);
  EXPECT_EQ(other.summary().size, 1);
}

}  // namespace
}  // namespace tandem::elastic
