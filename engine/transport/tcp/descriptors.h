// File descriptors are what bounds a rank's connections: every socket is
// one, and the soft RLIMIT_NOFILE (1,024 by default on Linux) is shared with
// CUDA, NCCL, the framework and the data loader. The transport checks its
// need before it opens anything, so that a job too large for the limit
// fails at init with a message naming the limit, instead of with EMFILE
// somewhere in the middle of a connection storm.
#pragma once

#include <cstddef>
#include <string>

namespace tandem {
namespace tcp {

struct DescriptorLimit {
  size_t soft = 0;  // RLIMIT_NOFILE rlim_cur (SIZE_MAX: unlimited)
  size_t hard = 0;  // rlim_max
  size_t open = 0;  // descriptors this process holds now (/proc/self/fd)
};
DescriptorLimit descriptor_limit();

// Throws SystemError(EMFILE) when `needed` more descriptors would not fit
// under the soft limit: "<what>: this rank needs 21 more file descriptors
// (<why>), but 1010 of the 1024 it may hold are open (RLIMIT_NOFILE ...):
// raise the soft limit ...".
void check_descriptor_budget(const std::string& what, size_t needed, const std::string& why);

// The advice appended to an EMFILE/ENFILE error from socket() or accept():
// which limit, its value, what to raise.
std::string descriptor_advice(int err);

}  // namespace tcp
}  // namespace tandem
