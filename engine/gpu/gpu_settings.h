// The GPU path's settings, each declared once in the engine's table
// (common/settings_table.h); docs/gpu.md lists the same table. Parsed strictly: a
// bad value is an InvalidArgument naming the variable and the value.
// The operation deadline is not here: the GPU path uses the engine's
// TANDEM_TIMEOUT, passed in by the caller, so both paths fail in one bound.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace tandem {
namespace gpu {

// The GPU path's settings, declared in common/settings_table.h.
extern const char* const kGpuSettings[3];

// Looks a variable up; nullptr when unset. Tests pass a map instead of
// touching the process environment.
using EnvLookup = std::function<const char*(const char*)>;
EnvLookup process_environment();

struct GpuSettings {
  std::string cuda_library;   // TANDEM_CUDA_LIBRARY: the only path tried when set
  std::string nccl_library;   // TANDEM_NCCL_LIBRARY: likewise
  std::optional<int> device;  // TANDEM_GPU_DEVICE

  static GpuSettings from(const EnvLookup& env);
};

}  // namespace gpu
}  // namespace tandem
