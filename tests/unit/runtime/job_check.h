// The checks of the job programs that drive the runtime through the public C
// API (runtime_job, straggler_job, autotune_job). A failed check prints
// "rank R: FAIL file:line: ..." with the engine's last error and exits 1;
// the including file supplies `rank`, the rank it reports.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "tandem/tandem.h"

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "rank %d: FAIL %s:%d: ", rank, __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                                       \
      std::fprintf(stderr, " (last error: %s)\n", tandem_last_error());        \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

#define OK(call) CHECK((call) == TANDEM_SUCCESS, "%s", #call)
