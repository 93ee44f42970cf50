// Which local address a rank listens on.
//
//  1. TANDEM_TCP_IFNAME names an interface (the plugin sets it per task to the
//     NIC closest to the task's GPU): its IPv4 address, else its IPv6 one.
//     Strict: an interface that does not exist, or has no address, is an
//     error naming it and listing the interfaces there are.
//  2. Unset, and every member of the group is on this node: loopback. No
//     traffic leaves the host and no interface has to be guessed.
//  3. Unset otherwise: the IPv4 address of the interface holding the default
//     route (/proc/net/route), the one a multi-homed node most likely shares
//     with its peers; failing that, the rule of interface_choice.h: the only
//     interface up besides loopback, or the one on the subnet of the peers'
//     addresses where the caller knows them; failing that, the address the
//     hostname resolves to if it is not a loopback one. Else the error of
//     interface_choice.h, listing the candidates and asking for
//     TANDEM_TCP_IFNAME.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "transport/tcp/interface_choice.h"

#include "transport/tcp/socket.h"

namespace tandem {
namespace tcp {

constexpr const char* kIfnameVariable = "TANDEM_TCP_IFNAME";

// The address to listen on, port 0. `why` receives a short description of
// the choice for the log ("TANDEM_TCP_IFNAME=eth1", "loopback: ...").
// `peers` (may be empty) holds, per member on another node, what
// listen_candidates() gave there.
SockAddr choose_listen_address(bool all_members_local, std::string& why,
                               const std::vector<std::vector<Ipv4Interface>>& peers = {});

// The IPv4 addresses this rank may listen on when its group spans nodes, for
// the peers' choice: TANDEM_TCP_IFNAME's, else the default route's
// interface's, else every candidate. Never throws: a bad setting gives an
// empty list here and its error where the address is chosen.
std::vector<Ipv4Interface> listen_candidates();

// listen_candidates() appended to a bootstrap blob, and read back from a
// peer's blob at offset `at` (`rank` names the peer in the error a malformed
// list gives).
void append_candidates(std::vector<uint8_t>& out);
std::vector<Ipv4Interface> parse_candidates(const std::vector<uint8_t>& b, size_t at, int rank);

// Address of the interface `ifname` (IPv4 preferred), port 0. Throws
// InvalidArgument naming the interface and listing the existing ones.
SockAddr address_of_interface(const std::string& ifname);

}  // namespace tcp
}  // namespace tandem
