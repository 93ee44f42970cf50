// What every fuzz target defines (tests/fuzz/meson.build): libFuzzer's entry
// point, called with one input at a time, by libFuzzer in the fuzzing build
// (contrib/fuzz.sh) and by corpus_main.cc over the committed corpus in the
// unit suite.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

// The token of the store and the elastic service under fuzz; the seeds'
// HELLOs carry it (seeds.cc), so that inputs reach past authentication.
inline constexpr const char kFuzzToken[] = "fuzz-token-0123456789abcdef";

// A property of a parser's answer does not hold: report it the way a
// sanitizer does, so that libFuzzer keeps the input as a crash.
[[noreturn]] void fuzz_fail(const char* what);
