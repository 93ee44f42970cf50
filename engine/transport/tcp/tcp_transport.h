// TCP between nodes: the contract the collectives rely on. Implementation in
// this folder.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "common/settings_table.h"
#include "transport/transport.h"

namespace tandem {

// Collective over the whole world: every rank calls it at the same time, each
// with the group it belongs to (world ranks, ascending, itself included);
// groups are disjoint. Returns a Transport whose rank i is members[i].
// Listens on the interface from TANDEM_TCP_IFNAME (set per task by the
// plugin) or the default one; addresses and a per-job secret travel through
// the bootstrap. Connections that do not present the secret are rejected.
//
// `planned`: the group indices this rank connects during set-up (the
// collectives' partners: collectives/partners.h); every other peer is
// connected on first use. The plan must be symmetric across the group.
// Without it, or with TANDEM_TCP_CONNECT=all (world rank 0's value counts),
// every pair is connected during set-up (a full mesh) and the listener is
// closed afterwards. Before it opens anything the transport checks that the
// planned connections fit under RLIMIT_NOFILE (docs/tcp.md).
std::unique_ptr<Transport> connect_tcp(Bootstrap& bootstrap, const std::vector<int>& members,
                                       std::chrono::milliseconds timeout);
std::unique_ptr<Transport> connect_tcp(Bootstrap& bootstrap, const std::vector<int>& members,
                                       std::chrono::milliseconds timeout,
                                       const std::vector<int>& planned);

// TANDEM_TCP_CONNECT: `planned` (default) connects at set-up only the peers
// the algorithms use and any other on first use; `all` connects every pair
// at set-up, as Tandem did before (kept to compare the two: the scale
// harness, contrib/bench/scale.sh). World rank 0's value is used everywhere.
constexpr const char* kConnectVariable = "TANDEM_TCP_CONNECT";
enum class ConnectScheme : uint8_t { kPlanned = 1, kAll = 2 };
ConnectScheme connect_scheme_from_environment();

// TANDEM_TCP_SPIN_US: how long a call keeps polling its sockets without
// sleeping (yielding the CPU between tries) after the last byte moved, before
// it sleeps in poll(). Waking a sleeping thread costs more than a whole
// round trip between two nodes on a VM whose idle vCPU halted (docs/tcp.md,
// "Spinning before sleeping"); a busy transfer keeps spinning as long as
// bytes keep moving. 0: sleep at once.
constexpr const char* kSpinVariable = "TANDEM_TCP_SPIN_US";
constexpr int kDefaultSpinUs = static_cast<int>(declared_default_int(kSpinVariable));
std::chrono::microseconds tcp_spin_from_environment();

// TANDEM_TCP_PIECE_BYTES: the piece by which a sendrecv moves both
// directions in step (tcp_transport.cc). 0, the default: chosen per pair of
// sockets from their congestion control, 128 KiB where it paces by its own
// estimate (BBR), 1 MiB otherwise (docs/tcp.md has the measurements). Else
// that many bytes, at least 4096.
constexpr const char* kPieceVariable = "TANDEM_TCP_PIECE_BYTES";
size_t tcp_piece_from_environment();
constexpr size_t kPacedPieceBytes = size_t{128} << 10;
constexpr size_t kUnpacedPieceBytes = size_t{1} << 20;
// The piece of one sendrecv: the setting when it is not 0, else
// kPacedPieceBytes where either socket's control paces by its own
// estimate, kUnpacedPieceBytes where neither does.
size_t sendrecv_piece(size_t setting, bool to_paces, bool from_paces);

// TANDEM_TCP_STATS=1: each transport prints, when it is destroyed, how its
// calls waited (done at once, caught while spinning, slept and how long,
// spins paused or skipped), to see where latency goes (docs/tcp.md).
constexpr const char* kStatsVariable = "TANDEM_TCP_STATS";
bool tcp_stats_from_environment();

}  // namespace tandem
