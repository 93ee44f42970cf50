// Wire format between a rank and the elastic membership service (service.h).
// Frames are the rendezvous store's (bootstrap/store_protocol.h: a 4-byte
// little-endian length, an op byte, fields); the key-value requests SET, GET
// and DEL and their answers are the store's own, so a generation's bootstrap
// exchange works exactly as under tandem-run.
//
// Every rank holds one connection for the life of its process (client.h).
// The first frame must be HELLO with the job's token:
//
//   rank -> service                          service -> rank
//   HELLO   token, node, label, pid u32,     WELCOME member u32, elastic_timeout_ms u64,
//           order u64                                ping_timeout_ms u64 | REJECTED reason
//   JOIN    last u32, probe endpoint         (later) CANDIDATES | ASSIGN | REMOVED | FAILED
//   REACH   round u32, n u32, n x member u32 (none; the next answer to JOIN follows)
//   DONE                                     (none)
//   PONG    nonce u32                        (none)
//   SET/GET/DEL as the store                 OK / VALUE / MISSING / LOST
//
// and, unasked, at any time:
//
//   PING    nonce u32                        (the rank's reader thread answers PONG)
//   UPDATE  timestamp u64, kind u32          (hosts were added: HostUpdateResult)
//
// `order` sorts new processes that join the same generation (the launcher's
// rank: srun's step and task id), so that generation 0's ranks are the
// launcher's and a later step's come after an earlier one's.
//
// JOIN asks for a place in the next generation; `last` is the generation
// this rank left (kNoGeneration for a new process). The service answers
// when the generation forms: first CANDIDATES (a probe round: every
// candidate connects to one candidate of every other node and reports the
// members it could not reach with REACH), then ASSIGN (rank, size, the node
// of every rank, the generation's job id), REMOVED (this rank's node is
// excluded, as Horovod blacklists a failed host) or FAILED (the job cannot
// go on: below the minimum size past the elastic timeout, the reset limit).
//
// Keys of generation g start with "g<g>/" (ElasticBootstrap); a GET of such a
// key answers LOST as soon as a member of g has left it (died, stopped
// answering, or asked for the next generation).
#pragma once

#include <cstdint>

#include "bootstrap/store_protocol.h"

namespace tandem {
namespace elastic {

enum class Op : uint8_t {
  kHello = 20,
  kJoin = 21,
  kReach = 22,
  kDone = 23,
  kPong = 24,
};

enum class Push : uint8_t {
  kWelcome = 30,
  kPing = 31,
  kUpdate = 32,
  kCandidates = 33,
  kAssign = 34,
  kRemoved = 35,
  kFailed = 36,
};

constexpr uint32_t kNoGeneration = 0xffffffffu;

// Horovod's HostUpdateResult (horovod/runner/elastic/worker.py).
enum HostUpdate : uint32_t { kNoUpdate = 0, kRemovedHosts = 1, kAddedHosts = 2 };

}  // namespace elastic
}  // namespace tandem
