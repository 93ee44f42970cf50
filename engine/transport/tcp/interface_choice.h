// Which interface to listen on when nothing names one and there is no
// default route: the rule MPI's TCP layers follow, as a pure function over
// interface lists so that it is tested without touching the host.
//
//  - exactly one candidate (an interface that is up, not loopback, with an
//    IPv4 address): that one;
//  - several, and the addresses the peers on other nodes may listen on are
//    known: the one candidate whose subnet holds an address of every such
//    peer;
//  - otherwise no guess: an error listing the candidates and naming
//    TANDEM_TCP_IFNAME.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tandem {
namespace tcp {

// One IPv4 address of an interface, in host byte order.
struct Ipv4Interface {
  std::string name;
  uint32_t address = 0;
  int prefix = 32;  // netmask length, 0..32
};

// Every up, non-loopback interface of this host with an IPv4 address, one
// entry per address.
std::vector<Ipv4Interface> ipv4_candidates();

// The candidate to listen on; `peers` holds, per peer on another node, the
// addresses it may listen on (empty: not known). `why` receives the reason
// for the log. Throws InvalidArgument when no single candidate follows.
Ipv4Interface choose_interface(const std::vector<Ipv4Interface>& candidates,
                               const std::vector<std::vector<Ipv4Interface>>& peers,
                               std::string& why);

// "eth0 10.0.0.1/24": for messages.
std::string describe(const Ipv4Interface& i);

}  // namespace tcp
}  // namespace tandem
