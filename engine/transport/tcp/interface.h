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
//     with its peers; failing that, the address the hostname resolves to if
//     it is not a loopback one. Else an error asking for TANDEM_TCP_IFNAME.
#pragma once

#include <string>

#include "transport/tcp/socket.h"

namespace tandem {
namespace tcp {

constexpr const char* kIfnameVariable = "TANDEM_TCP_IFNAME";

// The address to listen on, port 0. `why` receives a short description of
// the choice for the log ("TANDEM_TCP_IFNAME=eth1", "loopback: ...").
SockAddr choose_listen_address(bool all_members_local, std::string& why);

// Address of the interface `ifname` (IPv4 preferred), port 0. Throws
// InvalidArgument naming the interface and listing the existing ones.
SockAddr address_of_interface(const std::string& ifname);

}  // namespace tcp
}  // namespace tandem
