// One environment variable set for the life of a test scope and removed
// after, so that a setting's test leaves the process as it found it.
#pragma once

#include <cstdlib>

namespace tandem {

struct EnvGuard {
  const char* name;
  explicit EnvGuard(const char* n, const char* value) : name(n) { ::setenv(n, value, 1); }
  ~EnvGuard() { ::unsetenv(name); }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;
};

}  // namespace tandem
