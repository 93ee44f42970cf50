// Two "nodes" made of network namespaces joined by a veth pair: each rank is
// forked into its namespace and told its interface with TANDEM_TCP_IFNAME,
// exactly as the plugin does per task. The exchange must arrive intact, and
// the veth counters must show that the bytes crossed the link (not a
// loopback shortcut). The namespaces (and with them the veth pair) are
// deleted at the end, also when the test fails. Needs root and iproute2;
// skipped with a message otherwise.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/unit/tcp/fork_ranks.h"
#include "tests/unit/tcp/thread_ranks.h"
#include "transport/tcp/interface.h"
#include "transport/tcp/tcp_transport.h"

namespace tandem {
namespace {

using std::chrono::milliseconds;

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return "popen failed";
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int status = ::pclose(p);
  if (status != 0) out = "FAILED(" + std::to_string(status) + "): " + cmd + "\n" + out;
  return out;
}

// Two namespaces and a veth pair between them, on 198.18.0.0/30 (the range
// reserved for benchmarking, RFC 2544): nothing outside the namespaces sees
// it.
struct TwoNodes {
  std::string ns[2], dev[2], addr[2] = {"198.18.0.1", "198.18.0.2"};
  std::string error;

  TwoNodes() {
    const std::string id = std::to_string(::getpid());
    for (int i = 0; i < 2; ++i) {
      ns[i] = "tandem-tcp-" + id + (i == 0 ? "-a" : "-b");
      dev[i] = "tdv" + id + (i == 0 ? "a" : "b");
    }
    const std::vector<std::string> steps = {
        "ip netns add " + ns[0],
        "ip netns add " + ns[1],
        "ip link add " + dev[0] + " type veth peer name " + dev[1],
        "ip link set " + dev[0] + " netns " + ns[0],
        "ip link set " + dev[1] + " netns " + ns[1],
        "ip -n " + ns[0] + " addr add " + addr[0] + "/30 dev " + dev[0],
        "ip -n " + ns[1] + " addr add " + addr[1] + "/30 dev " + dev[1],
        "ip -n " + ns[0] + " link set " + dev[0] + " up",
        "ip -n " + ns[1] + " link set " + dev[1] + " up",
    };
    for (const auto& s : steps) {
      const std::string out = run(s);
      if (out.rfind("FAILED", 0) == 0) {
        error = out;
        return;
      }
    }
  }
  ~TwoNodes() {
    // Deleting a namespace deletes the veth end inside it, and its peer.
    for (const auto& n : ns) run("ip netns del " + n + " 2>/dev/null || true");
    run("ip link del " + dev[0] + " 2>/dev/null || true");
  }
  uint64_t tx_bytes(int i) {
    return std::strtoull(
        run("ip netns exec " + ns[i] + " cat /sys/class/net/" + dev[i] + "/statistics/tx_bytes")
            .c_str(),
        nullptr, 10);
  }
};

TEST(TcpNetns, TwoNamespaceNodesExchangeOverTheirInterfaces) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces";
  if (run("ip -V").rfind("FAILED", 0) == 0) GTEST_SKIP() << "iproute2 'ip' is not installed";
  TwoNodes nodes;
  ASSERT_EQ(nodes.error, "") << "could not build the two namespace nodes";
  const size_t bytes = (size_t{64} << 20) + 3;
  const uint64_t before0 = nodes.tx_bytes(0), before1 = nodes.tx_bytes(1);

  test::ForkRanks ranks(
      2,
      [&](int rank, Bootstrap& b, const std::function<void(const std::string&)>& say) {
        const std::string path = "/run/netns/" + nodes.ns[rank];
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) throw SystemError("setns " + path, errno);
        ::close(fd);
        ::setenv(tcp::kIfnameVariable, nodes.dev[rank].c_str(), 1);
        auto t = connect_tcp(b, {0, 1}, milliseconds(20000));
        auto out = test::pattern(bytes, rank);
        std::vector<uint8_t> in(bytes);
        t->sendrecv(1 - rank, out.data(), bytes, 1 - rank, in.data(), bytes);
        const long long diff = test::first_difference(in, test::pattern(bytes, 1 - rank));
        say(diff == -1 ? "ok" : "corrupt at byte " + std::to_string(diff));
      },
      {0, 1});
  ranks.serve(2, milliseconds(20000));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ranks.line(r, milliseconds(60000)), "ok") << "rank " << r;
    EXPECT_EQ(ranks.wait(r), 0) << "rank " << r;
  }
  EXPECT_GE(nodes.tx_bytes(0) - before0, bytes) << "rank 0's bytes did not cross the veth link";
  EXPECT_GE(nodes.tx_bytes(1) - before1, bytes) << "rank 1's bytes did not cross the veth link";
}

}  // namespace
}  // namespace tandem
