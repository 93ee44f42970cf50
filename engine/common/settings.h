// The data path's settings, each declared once in settings.cc with its
// default and parsed strictly: a value that does not parse is an
// InvalidArgument naming the variable and the value, never a silent default.
// docs/engine.md lists them from this one place.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace tandem {
namespace settings {

// TANDEM_TIMEOUT (seconds, fraction allowed, default 300): how long a
// collective waits for a silent (e.g. stopped) peer before failing with
// TimeoutError. A dead peer is noticed much sooner, independently of this.
std::chrono::milliseconds timeout();

// TANDEM_SHM_CHUNK_BYTES (default 262144): bytes per local rank that one
// pipeline step of a node-local collective moves. Small enough that a step
// stays in cache, large enough that the two barriers per step are amortised.
size_t shm_chunk_bytes();

// TANDEM_SHM_ARENA_BYTES (default 67108864): bytes per local rank of the
// shared segment reserved for buffers the runtime allocates there
// (Communicator::allocate_shared); the pages are only backed when used.
size_t shm_arena_bytes();

// TANDEM_SHM_SPIN_US (default 20): how long a node-local wait spins before it
// sleeps on a futex. Ignored (treated as 0) when the node has more local
// ranks than this process has CPUs, so co-located ranks are never starved.
int shm_spin_us();

// Parsing helpers, exposed for tests. Each throws InvalidArgument naming
// `name` and `value` with what was expected.
std::chrono::milliseconds parse_seconds(const char* name, const std::string& value);
size_t parse_bytes(const char* name, const std::string& value, size_t min, size_t max);
long parse_int(const char* name, const std::string& value, long min, long max);

}  // namespace settings
}  // namespace tandem
