#include "transport/tcp/interface_choice.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cerrno>
#include <memory>

#include "common/errors.h"
#include "transport/tcp/interface.h"

namespace tandem {
namespace tcp {
namespace {

uint32_t mask_of(int prefix) {
  if (prefix <= 0) return 0;
  if (prefix >= 32) return 0xffffffffu;
  return 0xffffffffu << (32 - prefix);
}

int prefix_of(uint32_t mask) {
  int n = 0;
  while (n < 32 && (mask & (0x80000000u >> n)) != 0) ++n;
  return n;
}

bool same_subnet(const Ipv4Interface& mine, uint32_t other) {
  const uint32_t m = mask_of(mine.prefix);
  return (mine.address & m) == (other & m);
}

bool reaches(const Ipv4Interface& mine, const std::vector<Ipv4Interface>& peer) {
  for (const auto& p : peer)
    if (same_subnet(mine, p.address)) return true;
  return false;
}

std::string listing(const std::vector<Ipv4Interface>& candidates) {
  std::string s;
  for (const auto& c : candidates) s += (s.empty() ? "" : ", ") + describe(c);
  return s;
}

struct IfaddrsDeleter {
  void operator()(ifaddrs* p) const { freeifaddrs(p); }
};

}  // namespace

std::string describe(const Ipv4Interface& i) {
  char text[INET_ADDRSTRLEN] = {};
  const in_addr a{htonl(i.address)};
  inet_ntop(AF_INET, &a, text, sizeof text);
  return i.name + " " + text + "/" + std::to_string(i.prefix);
}

std::vector<Ipv4Interface> ipv4_candidates() {
  ifaddrs* head = nullptr;
  if (getifaddrs(&head) != 0) throw SystemError("tcp: getifaddrs", errno);
  std::unique_ptr<ifaddrs, IfaddrsDeleter> owned(head);
  std::vector<Ipv4Interface> out;
  for (const ifaddrs* ifa = head; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || ifa->ifa_addr->sa_family != AF_INET) continue;
    if ((ifa->ifa_flags & IFF_UP) == 0 || (ifa->ifa_flags & IFF_LOOPBACK) != 0) continue;
    Ipv4Interface i;
    i.name = ifa->ifa_name;
    i.address = ntohl(reinterpret_cast<const sockaddr_in*>(ifa->ifa_addr)->sin_addr.s_addr);
    i.prefix = ifa->ifa_netmask == nullptr
                   ? 32
                   : prefix_of(ntohl(
                         reinterpret_cast<const sockaddr_in*>(ifa->ifa_netmask)->sin_addr.s_addr));
    out.push_back(i);
  }
  return out;
}

Ipv4Interface choose_interface(const std::vector<Ipv4Interface>& candidates,
                               const std::vector<std::vector<Ipv4Interface>>& peers,
                               std::string& why) {
  const std::string ask =
      std::string("; set ") + kIfnameVariable + " to the interface that reaches the other nodes";
  if (candidates.empty())
    throw InvalidArgument(
        "tcp: cannot choose a network interface: there is no default route and no interface "
        "besides loopback is up with an IPv4 address" +
        ask);
  if (candidates.size() == 1) {
    why = "the only interface up besides loopback (" + candidates[0].name + ")";
    return candidates[0];
  }
  bool known = !peers.empty();
  for (const auto& p : peers) known = known && !p.empty();
  if (!known)
    throw InvalidArgument(
        "tcp: cannot choose a network interface: there is no default route, several interfaces "
        "are up (" +
        listing(candidates) + ") and the other nodes' addresses are not known" + ask);
  std::vector<Ipv4Interface> reaching;
  for (const auto& c : candidates) {
    bool all = true;
    for (const auto& p : peers) all = all && reaches(c, p);
    if (all) reaching.push_back(c);
  }
  if (reaching.size() == 1) {
    why = "the one interface on the other nodes' subnet (" + reaching[0].name + ")";
    return reaching[0];
  }
  throw InvalidArgument(
      "tcp: cannot choose a network interface: there is no default route, several interfaces "
      "are up (" +
      listing(candidates) + ") and " +
      (reaching.empty() ? std::string("none of them is on a subnet of every other node")
                        : "several are on the other nodes' subnets (" + listing(reaching) + ")") +
      ask);
}

}  // namespace tcp
}  // namespace tandem
