// Input that lies in pieces rather than in one buffer: the runtime's fused
// tensors, handed to an allreduce that copies in only what peers read in
// place (shm/shm_group.h). A source returns a pointer to the input at a
// byte offset and, in *bytes, how many bytes lie there in a row (at least
// one element).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <functional>
#include <string>

#include "common/errors.h"

namespace tandem {

using InputSource = std::function<const void*(size_t offset, size_t* bytes)>;

// The source's bytes [at, at + len) into dst.
inline void copy_from_source(const InputSource& source, size_t at, void* dst, size_t len) {
  char* d = static_cast<char*>(dst);
  while (len > 0) {
    size_t n = 0;
    const void* p = source(at, &n);
    if (!p || n == 0)
      throw Error("allreduce: the input source has nothing at byte " + std::to_string(at) +
                  " (a bug in Tandem)");
    n = std::min(n, len);
    std::memcpy(d, p, n);
    at += n, d += n, len -= n;
  }
}

}  // namespace tandem
