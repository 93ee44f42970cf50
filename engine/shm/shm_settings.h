// The shared-memory settings, each declared once here with its default and
// read strictly through common/settings.h (a malformed value is an
// InvalidArgument naming the variable). Listed in docs/engine.md.
#pragma once

#include <cstddef>

#include "common/settings_table.h"

namespace tandem {

// TANDEM_SHM_CHUNK_BYTES (default 524288, 4096..67108864): bytes per local
// rank that one pipeline step of a node-local collective moves. Small enough
// that a step stays in cache (half a core's L2 here), large enough to
// amortise its barriers and the wait for the slower rank at each: 512 KiB
// beat 256 KiB from 1 to 64 MiB at 2 ranks and at 4 in place (4 out of
// place: the same or better) once the reduction kernel got faster
// (docs/engine.md, "Step size").
constexpr const char* kShmChunkVariable = "TANDEM_SHM_CHUNK_BYTES";
constexpr size_t kShmChunkDefault = declared_default_int(kShmChunkVariable);
size_t shm_chunk_bytes_from_environment();

// TANDEM_SHM_MAX_CHUNK_BYTES (default 4194304, 4096..67108864): the largest
// step per local rank the staged allreduce takes when barriers are dear
// (ShmGroup::decide_step); at or below TANDEM_SHM_CHUNK_BYTES every step is
// TANDEM_SHM_CHUNK_BYTES. Bounds the shared memory a node may back for
// staging: 2 x this per local rank.
constexpr const char* kShmMaxChunkVariable = "TANDEM_SHM_MAX_CHUNK_BYTES";
size_t shm_max_chunk_bytes_from_environment();

// TANDEM_SHM_ARENA_BYTES (default 67108864, 0..68719476736): bytes per local
// rank of the segment reserved for tandem_alloc_shared buffers; backed by
// memory only when allocated.
constexpr const char* kShmArenaVariable = "TANDEM_SHM_ARENA_BYTES";
size_t shm_arena_bytes_from_environment();

// TANDEM_SHM_SPIN_US (default 50, 0..1000000): how long a node-local wait
// polls before it sleeps on a futex: spinning when no two local ranks share
// a CPU, else yielding so that a peer sharing ours gets it
// (NodeSync::Polling, node_sync.cc).
constexpr const char* kShmSpinVariable = "TANDEM_SHM_SPIN_US";
int shm_spin_us_from_environment();

// TANDEM_SHM_STATS (default 0): 1 prints, when the group ends, one line per
// local rank to stderr: node-local collectives, their mean time, context
// switches and how their waits ended (spun, yielded, slept). For finding
// where the time goes (docs/engine.md); the counters cost nothing when off.
// TANDEM_SHM_CMA (default 1): local ranks read and write each other's
// buffers with one kernel copy (process_vm_readv/writev) when a probe at
// setup shows every pair may and, with 1, a setup measurement shows it
// faster than staging on this node; 2 uses it whenever permitted; 0 always
// stages through the shared segment.
constexpr const char* kShmCmaVariable = "TANDEM_SHM_CMA";
int shm_cma_from_environment();

constexpr const char* kShmStatsVariable = "TANDEM_SHM_STATS";
bool shm_stats_from_environment();

}  // namespace tandem
