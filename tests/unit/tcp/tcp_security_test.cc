// Only the job's own ranks can join its connections. A spy wrapped around the
// bootstrap of world rank 0 sees the published endpoints (as anyone scanning
// ports could find them) and, before rank 0 opens its own connections, fires
// foreign connections at every rank that accepts: silent, garbage, a hello
// with the wrong secret, with none (zeros), with another job's, the wrong
// protocol version, a correct secret but a rank outside the group, half a
// hello then closed, a slowloris that sends its hello a byte a second, and
// one closed at once. The hello has a fixed size and no length field, so no
// peer can make a rank allocate for a size it claims. The job must still connect
// and exchange data correctly, every foreign socket must be closed by the
// rank without an answer, and each rejection must be logged with the foreign
// socket's address. With every pair connected at set-up the listeners then
// close; with connections made on first use they stay open, and the same
// foreign connections fired after set-up are rejected just the same while
// the members connect among themselves.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "common/errors.h"
#include "tests/unit/tcp/thread_ranks.h"
#include "transport/tcp/socket.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/wire.h"

namespace tandem {
namespace {

using std::chrono::milliseconds;
using tcp::Fd;
using tcp::SockAddr;
using test::first_difference;
using test::pattern;
using test::run_ranks;

class SpyBootstrap : public Bootstrap {
 public:
  using Hook = std::function<void(const std::vector<Bytes>&)>;
  SpyBootstrap(Bootstrap& inner, Hook hook) : inner_(inner), hook_(std::move(hook)) {}
  const Identity& identity() const override { return inner_.identity(); }
  std::vector<Bytes> allgather(const Bytes& mine, milliseconds timeout) override {
    auto all = inner_.allgather(mine, timeout);
    if (hook_) hook_(all);
    return all;
  }

 private:
  Bootstrap& inner_;
  Hook hook_;
};

struct Foreign {
  std::string kind;
  Fd fd;
  std::string local;  // the address the rank sees and must log
};

Fd connect_blocking(const SockAddr& to) {
  Fd fd(::socket(to.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid() || ::connect(fd.get(), to.get(), to.len) != 0)
    throw SystemError("test: connect to " + tcp::to_string(to), errno);
  return fd;
}

std::string local_address(int fd) {
  SockAddr a;
  a.len = sizeof a.storage;
  ::getsockname(fd, a.get(), &a.len);
  return tcp::to_string(a);
}

void send_all(int fd, const void* data, size_t n) {
  ASSERT_EQ(::send(fd, data, n, MSG_NOSIGNAL), static_cast<ssize_t>(n));
}

// Sends `hello` one byte a second until the rank closes the socket (or
// all of it went, which a slowloris never gets to).
std::thread trickle(int fd, std::array<uint8_t, tcp::Hello::kSize> hello) {
  return std::thread([fd, hello] {
    for (uint8_t byte : hello) {
      if (::send(fd, &byte, 1, MSG_NOSIGNAL) != 1) return;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 1000) != 0) return;
    }
  });
}

std::vector<Foreign> attack(const SockAddr& target, const tcp::Secret& secret,
                            std::vector<std::thread>& slow) {
  std::vector<Foreign> out;
  auto open = [&](const std::string& kind) -> int {
    Foreign f{kind, connect_blocking(target), ""};
    f.local = local_address(f.fd.get());
    out.push_back(std::move(f));
    return out.back().fd.get();
  };
  open("silent");
  const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  send_all(open("garbage"), http, sizeof http - 1);
  tcp::Hello wrong;
  wrong.world_rank = 0;
  wrong.secret = secret;
  wrong.secret[7] ^= 0x01;  // one bit off
  send_all(open("wrong secret"), tcp::encode_hello(wrong).data(), tcp::Hello::kSize);
  tcp::Hello none;
  none.world_rank = 0;
  none.secret.fill(0);
  send_all(open("no secret"), tcp::encode_hello(none).data(), tcp::Hello::kSize);
  tcp::Hello other_job;
  other_job.world_rank = 0;
  other_job.secret.fill(0xa5);  // another job's rank 0, sent to this job's port
  send_all(open("another job's secret"), tcp::encode_hello(other_job).data(), tcp::Hello::kSize);
  tcp::Hello old_version;
  old_version.version = tcp::kProtocolVersion + 1;
  old_version.secret = secret;
  send_all(open("wrong version"), tcp::encode_hello(old_version).data(), tcp::Hello::kSize);
  tcp::Hello outsider;
  outsider.world_rank = 42;
  outsider.secret = secret;
  send_all(open("rank outside the group"), tcp::encode_hello(outsider).data(), tcp::Hello::kSize);
  send_all(open("magic only, then silent"), tcp::kHelloMagic, 8);
  const auto half = tcp::encode_hello(wrong);
  Foreign truncated{"half a hello, then closed", connect_blocking(target), ""};
  truncated.local = local_address(truncated.fd.get());
  send_all(truncated.fd.get(), half.data(), half.size() / 2);
  truncated.fd.reset();
  out.push_back(std::move(truncated));
  slow.push_back(trickle(open("slowloris"), tcp::encode_hello(wrong)));
  Foreign closed{"closed at once", connect_blocking(target), ""};
  closed.local = local_address(closed.fd.get());
  closed.fd.reset();
  out.push_back(std::move(closed));
  return out;
}

// The rank must have closed the socket without sending anything.
void expect_closed_without_answer(const Foreign& f) {
  if (!f.fd.valid()) return;
  pollfd p{f.fd.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 20000), 1) << f.kind << ": the rank kept the connection open";
  char c;
  const ssize_t n = ::recv(f.fd.get(), &c, 1, 0);
  EXPECT_LE(n, 0) << f.kind << ": the rank answered a foreign connection";
}

TEST(TcpSecurity, ForeignConnectionsAreRejectedAndTheJobIsUnaffected) {
  const int n = 3;
  std::vector<Foreign> foreign;
  std::vector<std::thread> slow;
  std::vector<SockAddr> endpoints;
  testing::internal::CaptureStderr();
  run_ranks(n, [&](int rank, Bootstrap& inner) {
    tcp::Secret secret{};
    SpyBootstrap spy(inner, [&, rank](const std::vector<Bytes>& all) {
      if (rank != 0) return;
      if (all[0].size() == secret.size() + 1) {  // the broadcast of the secret and scheme
        std::copy(all[0].begin(), all[0].begin() + secret.size(), secret.begin());
        return;
      }
      for (int r = 0; r < n; ++r) {
        const auto ep = tcp::decode_endpoint(all[r]);
        if (!ep) return;
        endpoints.push_back(*ep);
      }
      // Rank 0 accepts from nobody; ranks 1 and 2 accept from lower ranks.
      for (int r = 1; r < n; ++r)
        for (auto& f : attack(endpoints[r], secret, slow)) foreign.push_back(std::move(f));
    });
    auto t = connect_tcp(spy, {0, 1, 2}, milliseconds(30000));
    // The silent foreign sockets are still open here: setup did not wait on
    // them.
    const size_t bytes = (size_t{1} << 20) + 1;
    auto out = pattern(bytes, rank);
    std::vector<uint8_t> in(bytes);
    const int from = (rank + n - 1) % n;
    t->sendrecv((rank + 1) % n, out.data(), bytes, from, in.data(), bytes);
    EXPECT_EQ(first_difference(in, pattern(bytes, from)), -1);
    inner.barrier(milliseconds(10000));
    if (rank == 0) {
      // Setup is over and the listeners are closed: nothing more can connect.
      for (const auto& ep : endpoints) EXPECT_THROW(connect_blocking(ep), SystemError);
    }
    inner.barrier(milliseconds(10000));
  });
  const std::string log = testing::internal::GetCapturedStderr();
  // The transports are gone, so are the slowloris' sockets on their side.
  for (auto& t : slow) t.join();
  ASSERT_EQ(foreign.size(), 22u);
  for (const auto& f : foreign) {
    expect_closed_without_answer(f);
    EXPECT_THAT(log, testing::HasSubstr("rejected a connection from " + f.local))
        << f.kind << "; log:\n"
        << log;
  }
  EXPECT_THAT(log, testing::HasSubstr("wrong secret"));
  EXPECT_THAT(log, testing::HasSubstr("claims world rank 42"));
  EXPECT_THAT(log, testing::HasSubstr("protocol version"));
  EXPECT_THAT(log, testing::HasSubstr("closed before sending a complete hello"));
  // The silent and the slow were cut when the rank's connections were
  // complete, not when its transport closed.
  EXPECT_THAT(log, testing::HasSubstr("before this rank's connections were complete"));
  EXPECT_THAT(log,
              testing::Not(testing::HasSubstr("was not answered before the transport closed")));
}

TEST(TcpSecurity, ForeignConnectionsAfterSetUpAreRejectedWhileMembersConnectOnFirstUse) {
  const int n = 3;
  std::vector<Foreign> foreign;
  std::vector<std::thread> slow;
  std::vector<SockAddr> endpoints;
  tcp::Secret secret{};
  testing::internal::CaptureStderr();
  run_ranks(n, [&](int rank, Bootstrap& inner) {
    SpyBootstrap spy(inner, [&, rank](const std::vector<Bytes>& all) {
      if (rank != 0) return;
      if (all[0].size() == secret.size() + 1) {
        std::copy(all[0].begin(), all[0].begin() + secret.size(), secret.begin());
        return;
      }
      for (int r = 0; r < n; ++r)
        if (const auto ep = tcp::decode_endpoint(all[r])) endpoints.push_back(*ep);
    });
    // Nothing planned: every pair connects on first use, the listeners stay open.
    auto t = connect_tcp(spy, {0, 1, 2}, milliseconds(30000), {});
    EXPECT_EQ(t->traffic().connections, 0);
    inner.barrier(milliseconds(10000));
    if (rank == 0)
      for (int r = 0; r < n; ++r)
        for (auto& f : attack(endpoints[r], secret, slow)) foreign.push_back(std::move(f));
    inner.barrier(milliseconds(10000));
    const size_t bytes = (size_t{1} << 20) + 1;
    for (int k = 1; k < n; ++k) {
      auto out = pattern(bytes, rank);
      std::vector<uint8_t> in(bytes);
      const int from = (rank + n - k) % n;
      t->sendrecv((rank + k) % n, out.data(), bytes, from, in.data(), bytes);
      EXPECT_EQ(first_difference(in, pattern(bytes, from)), -1);
    }
    EXPECT_EQ(t->traffic().connections, n - 1);
    inner.barrier(milliseconds(10000));
    // Every pair is connected now: the listeners closed.
    if (rank == 0) {
      for (const auto& ep : endpoints) EXPECT_THROW(connect_blocking(ep), SystemError);
    }
    inner.barrier(milliseconds(10000));
  });
  const std::string log = testing::internal::GetCapturedStderr();
  // The transports are gone, so are the slowloris' sockets on their side.
  for (auto& t : slow) t.join();
  ASSERT_EQ(foreign.size(), 33u);
  for (const auto& f : foreign) {
    expect_closed_without_answer(f);
    EXPECT_THAT(log, testing::HasSubstr("rejected a connection from " + f.local))
        << f.kind << "; log:\n"
        << log;
  }
  EXPECT_THAT(log, testing::HasSubstr("claims world rank 42"));
  EXPECT_THAT(log, testing::HasSubstr("closed before sending a complete hello"));
}

}  // namespace
}  // namespace tandem
