// The interface rule of interface_choice.h, fed with interface lists: one
// candidate, several with the peers' subnets known, and every case where no
// single choice follows and the error must list the candidates.
#include "transport/tcp/interface_choice.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/errors.h"

namespace tandem {
namespace tcp {
namespace {

using ::testing::HasSubstr;

uint32_t ip(int a, int b, int c, int d) {
  return (uint32_t(a) << 24) | (uint32_t(b) << 16) | (uint32_t(c) << 8) | uint32_t(d);
}

Ipv4Interface iface(const std::string& name, uint32_t address, int prefix) {
  Ipv4Interface i;
  i.name = name;
  i.address = address;
  i.prefix = prefix;
  return i;
}

std::string error_of(const std::vector<Ipv4Interface>& c,
                     const std::vector<std::vector<Ipv4Interface>>& peers) {
  std::string why;
  try {
    choose_interface(c, peers, why);
  } catch (const InvalidArgument& e) { return e.what(); }
  return "no error";
}

TEST(InterfaceChoice, TheOnlyCandidateIsChosenWithoutPeers) {
  std::string why;
  const auto got = choose_interface({iface("veth1", ip(10, 0, 0, 2), 24)}, {}, why);
  EXPECT_EQ(got.name, "veth1");
  EXPECT_EQ(got.address, ip(10, 0, 0, 2));
  EXPECT_THAT(why, HasSubstr("only interface"));
}

TEST(InterfaceChoice, SeveralPickTheOneOnEveryPeersSubnet) {
  const std::vector<Ipv4Interface> mine = {iface("eth0", ip(192, 168, 1, 5), 24),
                                           iface("ib0", ip(10, 10, 0, 5), 16)};
  const std::vector<std::vector<Ipv4Interface>> peers = {
      {iface("rank 2", ip(10, 10, 3, 7), 16)},
      {iface("rank 3", ip(172, 16, 0, 1), 24), iface("rank 3", ip(10, 10, 9, 1), 16)}};
  std::string why;
  const auto got = choose_interface(mine, peers, why);
  EXPECT_EQ(got.name, "ib0");
  EXPECT_THAT(why, HasSubstr("subnet"));
  // The order of the candidates does not matter.
  const auto again = choose_interface({mine[1], mine[0]}, peers, why);
  EXPECT_EQ(again.name, "ib0");
}

TEST(InterfaceChoice, ThePrefixDecidesTheSubnet) {
  const std::vector<Ipv4Interface> mine = {iface("a", ip(10, 0, 0, 5), 24),
                                           iface("b", ip(10, 0, 1, 5), 24)};
  std::string why;
  EXPECT_EQ(choose_interface(mine, {{iface("p", ip(10, 0, 1, 200), 24)}}, why).name, "b");
  // With /16 both hold the peer: no single choice.
  const std::vector<Ipv4Interface> wide = {iface("a", ip(10, 0, 0, 5), 16),
                                           iface("b", ip(10, 0, 1, 5), 16)};
  const std::string e = error_of(wide, {{iface("p", ip(10, 0, 1, 200), 24)}});
  EXPECT_THAT(e,
              HasSubstr("several are on the other nodes' subnets (a 10.0.0.5/16, b 10.0.1.5/16)"));
  EXPECT_THAT(e, HasSubstr("TANDEM_TCP_IFNAME"));
}

TEST(InterfaceChoice, SeveralWithoutPeersListTheCandidates) {
  const std::string e =
      error_of({iface("eth0", ip(192, 168, 1, 5), 24), iface("ib0", ip(10, 10, 0, 5), 16)}, {});
  EXPECT_THAT(e, HasSubstr("eth0 192.168.1.5/24, ib0 10.10.0.5/16"));
  EXPECT_THAT(e, HasSubstr("not known"));
  EXPECT_THAT(e, HasSubstr("set TANDEM_TCP_IFNAME"));
}

TEST(InterfaceChoice, APeerWithNoAddressesMeansNotKnown) {
  const std::string e =
      error_of({iface("eth0", ip(192, 168, 1, 5), 24), iface("ib0", ip(10, 10, 0, 5), 16)},
               {{iface("p", ip(10, 10, 3, 3), 16)}, {}});
  EXPECT_THAT(e, HasSubstr("not known"));
}

TEST(InterfaceChoice, NoCandidateReachingEveryPeerIsAnError) {
  const std::string e =
      error_of({iface("eth0", ip(192, 168, 1, 5), 24), iface("ib0", ip(10, 10, 0, 5), 16)},
               {{iface("p", ip(192, 168, 1, 9), 24)}, {iface("q", ip(10, 10, 0, 9), 16)}});
  EXPECT_THAT(e, HasSubstr("none of them is on a subnet of every other node"));
  EXPECT_THAT(e, HasSubstr("eth0 192.168.1.5/24"));
}

TEST(InterfaceChoice, NoCandidateAtAllIsAnError) {
  const std::string e = error_of({}, {});
  EXPECT_THAT(e, HasSubstr("no interface besides loopback is up with an IPv4 address"));
  EXPECT_THAT(e, HasSubstr("TANDEM_TCP_IFNAME"));
}

TEST(InterfaceChoice, ThisHostsCandidatesAreUpAndNotLoopback) {
  for (const auto& c : ipv4_candidates()) {
    EXPECT_NE(c.name, "lo");
    EXPECT_NE(c.address >> 24, 127u) << describe(c);
    EXPECT_GE(c.prefix, 0);
    EXPECT_LE(c.prefix, 32);
  }
}

}  // namespace
}  // namespace tcp
}  // namespace tandem
