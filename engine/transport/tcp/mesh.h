// Connection setup: turns a group's published endpoints into one
// authenticated socket per peer (full mesh).
//
// Group index i connects to every j > i and accepts from every j < i, so each
// pair has exactly one connection and nobody has to break ties. Everything
// runs in one poll loop over the listener, the outgoing connects and the
// accepted-but-unidentified sockets: a foreign connection that sends nothing
// or garbage waits in its own slot and never delays the members' handshakes;
// it is closed and logged (with its address) as soon as it is seen to be
// wrong, or when setup ends, whichever comes first. Refused connects are
// retried with backoff until the deadline (a peer may still be starting).
#pragma once

#include <chrono>
#include <vector>

#include "transport/tcp/socket.h"
#include "transport/tcp/wire.h"

namespace tandem {
namespace tcp {

struct MeshPlan {
  int world_rank = 0;              // this process
  int index = 0;                   // this process's group index
  std::vector<int> members;        // world ranks by group index
  std::vector<SockAddr> addrs;     // listening endpoint by group index
  Secret secret{};
  std::chrono::milliseconds timeout{0};
};

// Connected sockets by group index (this rank's own slot stays invalid).
// Throws TimeoutError naming the members still missing at the deadline,
// PeerLostError when a member closes during its handshake.
std::vector<Fd> connect_mesh(Fd listener, const MeshPlan& plan);

// One line to stderr: "tandem[world rank 3] tcp: <message>". Security events
// (rejected connections) are always logged, whatever the log level.
void log_warning(int world_rank, const std::string& message);

}  // namespace tcp
}  // namespace tandem
