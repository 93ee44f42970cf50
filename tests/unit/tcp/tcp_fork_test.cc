// Forked ranks over TCP: a rank killed with SIGKILL in the middle of a 64 MiB
// exchange, and a rank stopped with SIGSTOP. Every survivor with a call
// pending on the victim must fail, naming the victim's group and world rank:
// PeerLostError for the kill (the per-call timeout is a minute, so a
// PeerLostError proves the loss was seen from the socket, not by timing out),
// TimeoutError after TANDEM_TIMEOUT for the stop. Detection times are printed
// for docs/tcp.md; no timing is asserted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "common/settings.h"
#include "tests/unit/tcp/fork_ranks.h"
#include "transport/tcp/tcp_transport.h"

namespace tandem {
namespace {

using std::chrono::milliseconds;
using test::ForkRanks;

constexpr int kVictim = 2;
constexpr size_t kBytes = size_t{64} << 20;

// Survivor 0 streams 64 MiB to the victim and expects 64 MiB back; survivor 1
// waits for 64 MiB from it. The victim connects, says ready and then does
// nothing: rank 0's send stalls once the socket buffers are full.
void body(int rank, Bootstrap& b, const std::function<void(const std::string&)>& say) {
  auto t = connect_tcp(b, {0, 1, 2}, timeout_from_environment());
  say("ready");
  if (rank == kVictim) {
    for (;;) ::pause();
  }
  std::vector<uint8_t> out(kBytes, 7), in(kBytes);
  try {
    if (rank == 0) t->sendrecv(kVictim, out.data(), kBytes, kVictim, in.data(), kBytes);
    else t->recv(kVictim, in.data(), kBytes);
    say("result none 0 the call returned");
  } catch (const std::exception& e) { say(test::describe(e)); }
}

struct Result {
  std::string kind;
  int64_t ns = 0;
  std::string message;
};

Result parse(const std::string& line) {
  std::istringstream in(line);
  std::string word;
  Result r;
  in >> word >> r.kind >> r.ns;
  std::getline(in, r.message);
  if (word != "result") r.message = "unexpected report: '" + line + "'";
  return r;
}

void run_scenario(int sig, const char* timeout_seconds, const std::string& expect_kind) {
  ::setenv(kTimeoutVariable, timeout_seconds, 1);  // read by the children
  ForkRanks ranks(3, body);
  ::unsetenv(kTimeoutVariable);
  ranks.serve(2, milliseconds(20000));
  for (int r = 0; r < 3; ++r) ASSERT_EQ(ranks.line(r, milliseconds(20000)), "ready") << r;
  // Give the survivors time to get into their calls and rank 0 to fill the
  // socket buffers; the result does not depend on it.
  std::this_thread::sleep_for(milliseconds(300));
  const int64_t at = test::now_ns();
  ranks.signal(kVictim, sig);
  for (int r = 0; r < 2; ++r) {
    const Result res = parse(ranks.line(r, milliseconds(60000)));
    EXPECT_EQ(res.kind, expect_kind) << "rank " << r << ": " << res.message;
    EXPECT_THAT(res.message, testing::HasSubstr("rank 2 (world rank 2)")) << "rank " << r;
    std::printf("[ measure  ] rank %d: %s %.1f ms after %s\n", r, res.kind.c_str(),
                (res.ns - at) / 1e6, sig == SIGKILL ? "SIGKILL" : "SIGSTOP");
    EXPECT_EQ(ranks.wait(r), 0) << "rank " << r << " did not exit cleanly";
  }
  ranks.signal(kVictim, SIGKILL);
  ranks.wait(kVictim);
}

TEST(TcpFork, KilledPeerIsPeerLostOnEverySurvivor) { run_scenario(SIGKILL, "60", "PeerLost"); }

TEST(TcpFork, StoppedPeerIsTimeoutOnEverySurvivor) { run_scenario(SIGSTOP, "1", "Timeout"); }

}  // namespace
}  // namespace tandem
