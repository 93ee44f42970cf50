// What one rank tells the other ranks of a process set in one cycle: the
// requests it announces for the first time, one bit per response-cache entry
// it has ready (combined with AND across ranks), one bit per cache entry it
// found stale (combined with OR), and its join and shutdown state.
//
// Every rank receives every rank's message (an allgather over the control
// plane) and runs the same deterministic decision on the same data, so all
// ranks agree on what runs and in which order without a second round trip
// from a coordinator.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "runtime/autotune.h"
#include "runtime/request.h"

namespace tandem::runtime {

// One operation a blocked rank waits for (deadlock.h): sent on the global
// set only, and only by a rank whose threads have all been waiting for a
// while with nothing new enqueued.
struct Wait {
  static constexpr uint8_t kJoin = 255;  // `type` of a wait in join
  int32_t set = 0;                       // process set id
  uint8_t type = 0;                      // OpType, or kJoin
  std::string name;                      // the tensor's name (a group's first)
  uint32_t more = 0;                     // other tensors of its group (grouped allreduce)
  // Global ranks of the set that have not enqueued it (nor joined): it runs
  // once each of them does.
  std::vector<int32_t> missing;

  bool operator==(const Wait& o) const {
    return set == o.set && type == o.type && name == o.name && more == o.more &&
           missing == o.missing;
  }
};

struct CycleMessage {
  bool joined = false;    // this rank has called join and waits for the rest
  bool shutdown = false;  // this rank is shutting down
  // Global set only: what this rank waits in, when it is blocked (deadlock.h);
  // empty otherwise, and then it costs no byte.
  std::vector<Wait> waits;
  std::vector<Request> requests;
  std::vector<uint64_t> cache_bits;    // ready cached entries, by bit position
  std::vector<uint64_t> invalid_bits;  // cache entries this rank found stale
  // Global set, rank 0 only, with autotune on: the values every rank
  // applies after this round (autotune.h), and whether they are the last.
  struct Tuning {
    TunedValues values;
    bool settled = false;
    bool operator==(const Tuning& o) const { return values == o.values && settled == o.settled; }
  };
  std::optional<Tuning> tuning;

  Bytes serialize() const;
  // Throws tandem::Error on a truncated or malformed message.
  static CycleMessage parse(const Bytes& bytes);
};

// Bit-vector helpers: vectors grow on demand, missing words are zero.
void set_bit(std::vector<uint64_t>& bits, size_t index);
bool test_bit(const std::vector<uint64_t>& bits, size_t index);

// A round in few bytes. (Autotune's values make a round of messages too:
// full_round_needed.) Every round starts with an allreduce (MAX, one byte
// each, i.e. an OR) of this form: byte 0 says the member has more to say
// than its cache bits (new requests, stale entries, join, shutdown, waits:
// full_round_needed) or wants to know who is missing a stalled tensor; then,
// for each of the cache's `span` entries, whether the member has it ready,
// and whether it has not. The OR of the first is "ready somewhere", of the
// second "missing somewhere", the negation of the AND the cache needs. When
// no member set byte 0, that is the whole round: log2(n) rounds of 1 + 2
// span bytes across nodes instead of an allgather of every member's message
// (n x 1 KiB per rank per cycle). Otherwise the messages follow in full.
// Byte 0 is 2 when the global set's rank 0 starts a straggler report in
// this round (straggler.h): a MAX keeps it over 1, and it implies a round of
// messages, so no member's need for one is lost.
bool full_round_needed(const CycleMessage& m);
std::vector<uint8_t> encode_bit_round(const CycleMessage& mine, size_t span, bool full,
                                      bool report = false);
struct BitRound {
  bool full = false;                        // someone needs the messages
  bool report = false;                      // a straggler report follows this round
  std::vector<uint64_t> ready_somewhere;    // OR of the ready bits
  std::vector<uint64_t> missing_somewhere;  // OR of their negations
};
// Reads the reduced bytes; throws Error on a length that is not 1 + 2 span.
BitRound decode_bit_round(const std::vector<uint8_t>& reduced, size_t span);

}  // namespace tandem::runtime
