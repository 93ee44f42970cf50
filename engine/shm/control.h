// The control block at the start of a node's shared segment: what the local
// ranks publish to each other. Plain data with atomics only (it is shared
// between processes); every field a rank writes sits in that rank's own
// cache line, so ranks never write to the same line except the wake word.
#pragma once

#include <atomic>
#include <cstdint>

namespace tandem {

constexpr uint32_t kControlMagic = 0x546e6431;  // "Tnd1"
constexpr int kMaxLocalRanks = 512;

enum class AbortKind : uint32_t { kNone = 0, kPeerLost = 1, kTimeout = 2, kAborted = 3 };

// Bytes of a collective's input that travel in the line of the barrier
// counter itself (RankControl::inline_data): a peer that sees the
// arrival has the data in the same cache miss.
constexpr size_t kInlineBytes = 24;

// CPUs a rank's published affinity can name (CPU_SETSIZE).
constexpr int kCpuWords = 1024 / 64;

struct alignas(64) RankControl {
  std::atomic<uint64_t> epoch;  // barriers this rank has arrived at
  // Small inputs, by parity of the barrier they precede (epoch & 1): a slot
  // is rewritten two barriers later, after every reader passed the one in
  // between (they read right after the barrier the slot precedes).
  alignas(8) unsigned char inline_data[2][kInlineBytes];
  // -- the lines below are written once per collective at most
  alignas(64) std::atomic<int32_t> pid;  // for liveness checks (pidfd) and single-copy access
  std::atomic<uint32_t> cma_ok;  // setup: 1 when this rank reached every peer (peer_memory.h)
  // Double-buffered by step parity (see ShmGroup): where this rank's input
  // of the step lies (segment offset), and one small value per step.
  std::atomic<uint64_t> offset[2];
  std::atomic<uint64_t> value[2];
  // What this rank's last wait in a timed barrier took (ns): the staged
  // allreduce's step size follows what a barrier costs (ShmGroup::decide_step).
  std::atomic<uint64_t> probe_ns;
  // The direct allreduce (ShmGroup::allreduce_direct), by parity: this
  // rank's send and recv buffers as addresses in its own process, and as
  // segment offsets when they lie in its arena (kNotInSegment otherwise).
  std::atomic<uint64_t> send_addr[2];
  std::atomic<uint64_t> recv_addr[2];
  std::atomic<uint64_t> send_off[2];
  std::atomic<uint64_t> recv_off[2];
  // Setup probe of single-copy access: where this rank's probe words are
  // and the token it expects there.
  std::atomic<uint64_t> probe_addr;
  std::atomic<uint64_t> probe_token;
  // Setup: the CPUs this rank may run on (its affinity, CPU i is bit i % 64
  // of word i / 64), so that every rank can tell whether the node's ranks
  // outnumber the CPUs they share (NodeSync::watch_peers).
  alignas(64) std::atomic<uint64_t> cpus[kCpuWords];
};

constexpr uint64_t kNotInSegment = ~uint64_t{0};

// One local rank's doorbell (shm/doorbell.h): written by the ranks that ring
// it, so it has a line of its own apart from RankControl.
struct alignas(64) DoorbellSlot {
  std::atomic<uint32_t> word;      // futex word: bumped to wake the rank's waiter
  std::atomic<uint32_t> sleeping;  // 1 while the rank's waiter is (about to be) asleep
};

struct ControlBlock {
  uint32_t magic;
  uint32_t local_size;
  uint64_t chunk_bytes;
  uint64_t arena_bytes;
  // Setup: local ranks other than the creator that have opened the segment;
  // the last of them removes its name (ShmGroup's constructor).
  std::atomic<uint32_t> opened;
  // Bytes per rank per step of the next staged allreduce: written by local
  // rank 0 only between the first and the last barrier of a staged
  // allreduce, read by every rank before its first arrival in the next one,
  // so every rank of the node takes the same steps (ShmGroup::decide_step).
  alignas(64) std::atomic<uint64_t> step_bytes;
  // Bit k: an allreduce of size class k takes the direct path (single copy)
  // where the node may; written and read as step_bytes is
  // (shm/path_choice.h).
  std::atomic<uint64_t> direct_classes;
  alignas(64) std::atomic<uint32_t> wake;         // futex word: bumped when sleepers must wake
  std::atomic<uint32_t> sleepers;                 // ranks inside futex_wait
  alignas(64) std::atomic<uint32_t> abort_state;  // 0 none, 1 writing, 2 message ready
  uint32_t abort_kind;
  char abort_message[1024];
  RankControl ranks[kMaxLocalRanks];
  alignas(64) std::atomic<uint64_t> rounds_requested;  // shm/doorbell.h
  DoorbellSlot doorbells[kMaxLocalRanks];
};

static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared atomics must be lock-free");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "shared atomics must be lock-free");

}  // namespace tandem
