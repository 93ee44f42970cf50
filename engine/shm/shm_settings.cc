#include "shm/shm_settings.h"

#include "common/settings.h"

namespace tandem {

size_t shm_chunk_bytes_from_environment() {
  return static_cast<size_t>(env_int(kShmChunkVariable));
}

size_t shm_max_chunk_bytes_from_environment() {
  return static_cast<size_t>(env_int(kShmMaxChunkVariable));
}

size_t shm_arena_bytes_from_environment() {
  return static_cast<size_t>(env_int(kShmArenaVariable));
}

int shm_cma_from_environment() { return static_cast<int>(env_int(kShmCmaVariable)); }

bool shm_stats_from_environment() { return env_int(kShmStatsVariable) == 1; }

int shm_spin_us_from_environment() { return static_cast<int>(env_int(kShmSpinVariable)); }

}  // namespace tandem
