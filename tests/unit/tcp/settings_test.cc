// Strict settings (engine/common/settings.h) and the TCP interface choice.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "common/errors.h"
#include "common/settings.h"
#include "transport/tcp/interface.h"
#include "transport/tcp/tcp_transport.h"
#include "../common/env_guard.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) { return e.what(); }
  return "no InvalidArgument";
}

TEST(Settings, TimeoutIsSecondsWithFractions) {
  ::unsetenv(kTimeoutVariable);
  EXPECT_EQ(timeout_from_environment(), std::chrono::milliseconds(300000));
  EnvGuard g(kTimeoutVariable, "2.5");
  EXPECT_EQ(timeout_from_environment(), std::chrono::milliseconds(2500));
  for (const char* bad : {"0", "-3", "5m", "nan", "inf", "1e30", "abc", " 2"}) {
    ::setenv(kTimeoutVariable, bad, 1);
    EXPECT_THAT(message_of([] { timeout_from_environment(); }),
                HasSubstr(std::string("TANDEM_TIMEOUT='") + bad + "'"))
        << bad;
  }
}

TEST(TcpInterface, NamedInterfaceGivesItsAddress) {
  const auto a = tcp::address_of_interface("lo");
  EXPECT_EQ(tcp::to_string(a), "127.0.0.1:0");
}

TEST(TcpInterface, UnknownInterfaceNamesItAndListsTheOthers) {
  const std::string m = message_of([] { tcp::address_of_interface("nosuch9"); });
  EXPECT_THAT(m, HasSubstr("TANDEM_TCP_IFNAME='nosuch9'"));
  EXPECT_THAT(m, HasSubstr("interfaces here: "));
  EXPECT_THAT(m, HasSubstr("lo"));
}

TEST(TcpInterface, IfnameWinsOverLoopback) {
  EnvGuard g(tcp::kIfnameVariable, "lo");
  std::string why;
  EXPECT_EQ(tcp::to_string(tcp::choose_listen_address(false, why)), "127.0.0.1:0");
  EXPECT_THAT(why, HasSubstr("TANDEM_TCP_IFNAME=lo"));
  ::setenv(tcp::kIfnameVariable, "nosuch9", 1);
  EXPECT_THROW(tcp::choose_listen_address(true, why), InvalidArgument);
}

TEST(TcpInterface, AllLocalMeansLoopback) {
  ::unsetenv(tcp::kIfnameVariable);
  std::string why;
  EXPECT_EQ(tcp::to_string(tcp::choose_listen_address(true, why)), "127.0.0.1:0");
  EXPECT_THAT(why, HasSubstr("loopback"));
}

TEST(TcpSettings, SpinAndStatsAreStrict) {
  ::unsetenv(kSpinVariable);
  ::unsetenv(kStatsVariable);
  EXPECT_EQ(tcp_spin_from_environment().count(), kDefaultSpinUs);
  EXPECT_FALSE(tcp_stats_from_environment());
  {
    EnvGuard g(kSpinVariable, "0");
    EXPECT_EQ(tcp_spin_from_environment().count(), 0);
    ::setenv(kSpinVariable, "250", 1);
    EXPECT_EQ(tcp_spin_from_environment().count(), 250);
    for (const char* bad : {"-1", "10us", "2000000", "1.5"}) {
      ::setenv(kSpinVariable, bad, 1);
      EXPECT_THAT(message_of([] { tcp_spin_from_environment(); }),
                  HasSubstr(std::string("TANDEM_TCP_SPIN_US='") + bad + "'"));
    }
  }
  EnvGuard g(kStatsVariable, "1");
  EXPECT_TRUE(tcp_stats_from_environment());
  ::setenv(kStatsVariable, "maybe", 1);
  EXPECT_THAT(message_of([] { tcp_stats_from_environment(); }), HasSubstr("TANDEM_TCP_STATS"));
}

TEST(TcpSettings, PieceIsZeroOrAtLeastAPage) {
  ::unsetenv(kPieceVariable);
  EXPECT_EQ(tcp_piece_from_environment(), 0u);
  EnvGuard g(kPieceVariable, "65536");
  EXPECT_EQ(tcp_piece_from_environment(), 65536u);
  ::setenv(kPieceVariable, "0", 1);
  EXPECT_EQ(tcp_piece_from_environment(), 0u);
  ::setenv(kPieceVariable, "100", 1);
  EXPECT_THAT(message_of([] { tcp_piece_from_environment(); }),
              HasSubstr("TANDEM_TCP_PIECE_BYTES=100 is too small"));
  for (const char* bad : {"-1", "1M", "1.5"}) {
    ::setenv(kPieceVariable, bad, 1);
    EXPECT_THAT(message_of([] { tcp_piece_from_environment(); }),
                HasSubstr(std::string("TANDEM_TCP_PIECE_BYTES='") + bad + "'"));
  }
}

TEST(TcpSettings, ConnectSchemeIsStrict) {
  ::unsetenv(kConnectVariable);
  EXPECT_EQ(connect_scheme_from_environment(), ConnectScheme::kPlanned);
  EnvGuard g(kConnectVariable, "all");
  EXPECT_EQ(connect_scheme_from_environment(), ConnectScheme::kAll);
  ::setenv(kConnectVariable, "planned", 1);
  EXPECT_EQ(connect_scheme_from_environment(), ConnectScheme::kPlanned);
  for (const char* bad : {"mesh", "ALL", " all"}) {
    ::setenv(kConnectVariable, bad, 1);
    EXPECT_THAT(message_of([] { connect_scheme_from_environment(); }),
                HasSubstr(std::string("TANDEM_TCP_CONNECT='") + bad + "'"));
  }
}

}  // namespace
}  // namespace tandem
