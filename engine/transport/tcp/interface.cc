#include "transport/tcp/interface.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "common/errors.h"
#include "common/settings.h"

namespace tandem {
namespace tcp {
namespace {

struct IfaddrsDeleter {
  void operator()(ifaddrs* p) const { freeifaddrs(p); }
};
using IfaddrsPtr = std::unique_ptr<ifaddrs, IfaddrsDeleter>;

IfaddrsPtr list_interfaces() {
  ifaddrs* head = nullptr;
  if (getifaddrs(&head) != 0) throw SystemError("tcp: getifaddrs", errno);
  return IfaddrsPtr(head);
}

SockAddr from_ifaddr(const ifaddrs* ifa) {
  SockAddr a;
  if (ifa->ifa_addr->sa_family == AF_INET) {
    a.len = sizeof(sockaddr_in);
  } else {
    a.len = sizeof(sockaddr_in6);
  }
  std::memcpy(&a.storage, ifa->ifa_addr, a.len);
  if (a.family() == AF_INET6) {
    // A link-local IPv6 address is only usable with its interface's scope.
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
    if (IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr)) in6->sin6_scope_id = if_nametoindex(ifa->ifa_name);
  }
  a.set_port(0);
  return a;
}

bool is_ip(const ifaddrs* ifa) {
  return ifa->ifa_addr != nullptr &&
         (ifa->ifa_addr->sa_family == AF_INET || ifa->ifa_addr->sa_family == AF_INET6);
}

// The interface of the IPv4 default route, or "" when there is none.
std::string default_route_interface() {
  std::ifstream routes("/proc/net/route");
  std::string line;
  std::getline(routes, line);  // header
  while (std::getline(routes, line)) {
    std::istringstream fields(line);
    std::string ifname, destination, gateway, flags;
    fields >> ifname >> destination >> gateway >> flags;
    // RTF_UP is bit 0 of the flags column (hex).
    if (destination == "00000000" && (std::stoul(flags, nullptr, 16) & 1u)) return ifname;
  }
  return "";
}

bool hostname_address(SockAddr& out) {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return false;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host, nullptr, &hints, &res) != 0) return false;
  bool found = false;
  for (addrinfo* ai = res; ai != nullptr && !found; ai = ai->ai_next) {
    SockAddr a;
    a.len = ai->ai_addrlen;
    std::memcpy(&a.storage, ai->ai_addr, ai->ai_addrlen);
    const bool loopback =
        (a.family() == AF_INET &&
         (ntohl(reinterpret_cast<sockaddr_in*>(&a.storage)->sin_addr.s_addr) >> 24) == 127) ||
        (a.family() == AF_INET6 &&
         IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<sockaddr_in6*>(&a.storage)->sin6_addr));
    if (!loopback) {
      a.set_port(0);
      out = a;
      found = true;
    }
  }
  freeaddrinfo(res);
  return found;
}

SockAddr to_sockaddr(const Ipv4Interface& i) {
  SockAddr a;
  auto* in = reinterpret_cast<sockaddr_in*>(&a.storage);
  in->sin_family = AF_INET;
  in->sin_addr.s_addr = htonl(i.address);
  a.len = sizeof(sockaddr_in);
  return a;
}

}  // namespace

SockAddr address_of_interface(const std::string& ifname) {
  auto head = list_interfaces();
  std::set<std::string> names;
  bool exists = false;
  const ifaddrs* v4 = nullptr;
  const ifaddrs* v6 = nullptr;
  for (const ifaddrs* ifa = head.get(); ifa != nullptr; ifa = ifa->ifa_next) {
    names.insert(ifa->ifa_name);
    if (ifname != ifa->ifa_name) continue;
    exists = true;
    if (!is_ip(ifa)) continue;
    if (ifa->ifa_addr->sa_family == AF_INET && v4 == nullptr) v4 = ifa;
    if (ifa->ifa_addr->sa_family == AF_INET6 && v6 == nullptr) v6 = ifa;
  }
  if (v4 != nullptr) return from_ifaddr(v4);
  if (v6 != nullptr) return from_ifaddr(v6);
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  if (exists)
    throw InvalidArgument("tcp: interface '" + ifname + "' has no IPv4 or IPv6 address; " +
                          "choose one that has (interfaces here: " + list + ")");
  throw InvalidArgument(std::string(kIfnameVariable) + "='" + ifname +
                        "': no such network interface on this host; interfaces here: " + list);
}

SockAddr choose_listen_address(bool all_members_local, std::string& why,
                               const std::vector<std::vector<Ipv4Interface>>& peers) {
  const std::string ifname = env_string(kIfnameVariable);
  if (!ifname.empty()) {
    why = std::string(kIfnameVariable) + "=" + ifname;
    return address_of_interface(ifname);
  }
  if (all_members_local) {
    why = "loopback: every member of the group is on this node";
    SockAddr a;
    auto* in = reinterpret_cast<sockaddr_in*>(&a.storage);
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.len = sizeof(sockaddr_in);
    return a;
  }
  const std::string route_if = default_route_interface();
  if (!route_if.empty()) {
    why = "interface of the default route (" + route_if + ")";
    return address_of_interface(route_if);
  }
  try {
    return to_sockaddr(choose_interface(ipv4_candidates(), peers, why));
  } catch (const InvalidArgument&) {
    SockAddr a;
    if (!hostname_address(a)) throw;
    why = "address of the hostname";
    return a;
  }
}

std::vector<Ipv4Interface> listen_candidates() {
  try {
    const std::string ifname = env_string(kIfnameVariable);
    const std::string only = !ifname.empty() ? ifname : default_route_interface();
    std::vector<Ipv4Interface> all = ipv4_candidates();
    if (only.empty()) return all;
    std::vector<Ipv4Interface> out;
    for (const auto& c : all)
      if (c.name == only) out.push_back(c);
    return out;
  } catch (const Error&) { return {}; }
}

void append_candidates(std::vector<uint8_t>& out) {
  const auto mine = listen_candidates();
  const size_t n = std::min<size_t>(mine.size(), 255);
  out.push_back(static_cast<uint8_t>(n));
  for (size_t i = 0; i < n; ++i) {
    for (int shift = 24; shift >= 0; shift -= 8)
      out.push_back(static_cast<uint8_t>(mine[i].address >> shift));
    out.push_back(static_cast<uint8_t>(mine[i].prefix));
  }
}

std::vector<Ipv4Interface> parse_candidates(const std::vector<uint8_t>& b, size_t at, int rank) {
  const std::string who = "world rank " + std::to_string(rank);
  if (at >= b.size())
    throw BootstrapError("tcp setup: " + who +
                         " sent no address list: every rank must run the same Tandem version");
  const size_t n = b[at++];
  if (b.size() != at + 5 * n)
    throw BootstrapError("tcp setup: " + who + " sent a malformed address list (" +
                         std::to_string(b.size()) +
                         " bytes): every rank must run the same Tandem version");
  std::vector<Ipv4Interface> out(n);
  for (size_t i = 0; i < n; ++i, at += 5) {
    out[i].name = who;
    out[i].address = (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) |
                     (uint32_t{b[at + 2]} << 8) | uint32_t{b[at + 3]};
    out[i].prefix = std::min<int>(b[at + 4], 32);
  }
  return out;
}

}  // namespace tcp
}  // namespace tandem
