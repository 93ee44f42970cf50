#include <cstdio>
#include <cstdlib>

#include "fuzz_target.h"

void fuzz_fail(const char* what) {
  std::fprintf(stderr, "fuzz target: %s\n", what);
  std::abort();  // libFuzzer keeps an aborting input as a crash
}
