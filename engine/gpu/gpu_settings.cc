#include "gpu/gpu_settings.h"

#include <cerrno>
#include <cstdlib>

#include "common/errors.h"
#include "common/settings.h"

namespace tandem {
namespace gpu {

const char* const kGpuSettings[3] = {"TANDEM_CUDA_LIBRARY", "TANDEM_NCCL_LIBRARY",
                                     "TANDEM_GPU_DEVICE"};

EnvLookup process_environment() {
  return [](const char* name) -> const char* { return declared_getenv(name); };
}

namespace {

std::string library_override(const EnvLookup& env, const char* name) {
  const char* value = env(name);
  if (value == nullptr) return "";
  if (value[0] == '\0')
    throw InvalidArgument(std::string(name) +
                          " is set but empty: unset it to use the default search, or give the "
                          "path of the library");
  return value;
}

std::optional<int> device_override(const EnvLookup& env) {
  const char* value = env("TANDEM_GPU_DEVICE");
  if (value == nullptr) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long parsed = std::strtol(value, &end, 10);
  const bool digits_only = value[0] >= '0' && value[0] <= '9' && *end == '\0';
  if (!digits_only || errno != 0 || parsed > setting_declaration("TANDEM_GPU_DEVICE").max)
    throw InvalidArgument("TANDEM_GPU_DEVICE='" + std::string(value) +
                          "': expected a CUDA device index (0, 1, ...) among the visible GPUs, "
                          "or unset it to use the local rank");
  return static_cast<int>(parsed);
}

}  // namespace

GpuSettings GpuSettings::from(const EnvLookup& env) {
  GpuSettings s;
  s.cuda_library = library_override(env, "TANDEM_CUDA_LIBRARY");
  s.nccl_library = library_override(env, "TANDEM_NCCL_LIBRARY");
  s.device = device_override(env);
  for (const char* name : kGpuSettings)
    if (const char* v = env(name)) note_setting(name, v, setting_declaration(name).default_text);
  return s;
}

}  // namespace gpu
}  // namespace tandem
