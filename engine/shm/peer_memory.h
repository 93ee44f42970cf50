// Single-copy access to the local peers' private buffers: Linux cross-memory
// attach (process_vm_readv / process_vm_writev), the mechanism Open MPI's
// vader BTL calls CMA. A rank reads a peer's send buffer and writes into its
// recv buffer with one kernel copy, instead of both staging through the
// shared segment (copy in, copy out).
//
// It needs ptrace-attach permission over the peer: same user, the peer
// dumpable, and no Yama ptrace_scope >= 1 restriction
// (/proc/sys/kernel/yama/ptrace_scope), no seccomp filter refusing the
// calls (container runtimes' default profiles do). Whether it works is
// probed once, at setup, between every pair of local ranks in both
// directions, and the node agrees: CMA is used only when every pair works,
// so that every rank takes the same path. TANDEM_SHM_CMA=0 turns it off.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/types.h>

namespace tandem {

// What process_vm_readv/writev report, as text for error messages.
std::string cma_error_text(int err);

// Copies `bytes` from address `remote` in process `pid` to `local`. Returns
// 0 or the errno of the first failure (ESRCH: the process is gone; EPERM:
// not allowed; EFAULT: the range is not mapped there).
int cma_read(pid_t pid, const void* remote, void* local, size_t bytes);
// Copies `bytes` from `local` to address `remote` in process `pid`.
int cma_write(pid_t pid, void* remote, const void* local, size_t bytes);

}  // namespace tandem
