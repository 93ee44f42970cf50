#include "shm/shm_settings.h"

#include "common/settings.h"

namespace tandem {

size_t shm_chunk_bytes_from_environment() {
  return static_cast<size_t>(env_int(kShmChunkVariable, kShmChunkDefault, 4096, 64 << 20));
}

size_t shm_max_chunk_bytes_from_environment() {
  return static_cast<size_t>(env_int(kShmMaxChunkVariable, 4 << 20, 4096, 64 << 20));
}

size_t shm_arena_bytes_from_environment() {
  return static_cast<size_t>(env_int(kShmArenaVariable, 64 << 20, 0, int64_t{64} << 30));
}

int shm_cma_from_environment() { return static_cast<int>(env_int(kShmCmaVariable, 1, 0, 2)); }

bool shm_stats_from_environment() { return env_int(kShmStatsVariable, 0, 0, 1) == 1; }

int shm_spin_us_from_environment() {
  return static_cast<int>(env_int(kShmSpinVariable, 50, 0, 1000000));
}

}  // namespace tandem
