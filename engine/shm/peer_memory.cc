#include "shm/peer_memory.h"

#include <cerrno>
#include <cstring>
#include <sys/uio.h>

namespace tandem {
namespace {

// Both calls may move fewer bytes than asked (a fault part-way through):
// continue from where they stopped until done or an error repeats.
template <typename Call>
int cma_loop(Call call, size_t bytes) {
  size_t done = 0;
  while (done < bytes) {
    const ssize_t got = call(done);
    if (got < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (got == 0) return EFAULT;
    done += static_cast<size_t>(got);
  }
  return 0;
}

}  // namespace

std::string cma_error_text(int err) {
  switch (err) {
    case EPERM:
      return "not permitted (EPERM: ptrace permission between the ranks is refused; see "
             "/proc/sys/kernel/yama/ptrace_scope, or set TANDEM_SHM_CMA=0)";
    case ENOSYS:
      return "not available (ENOSYS: kernel or seccomp filter without process_vm_readv; set "
             "TANDEM_SHM_CMA=0)";
    case ESRCH: return "the process is gone (ESRCH)";
    case EFAULT: return "the address range is not mapped in the process (EFAULT)";
    default: return std::strerror(err);
  }
}

int cma_read(pid_t pid, const void* remote, void* local, size_t bytes) {
  return cma_loop(
      [&](size_t done) {
        struct iovec l = {static_cast<char*>(local) + done, bytes - done};
        struct iovec r = {const_cast<char*>(static_cast<const char*>(remote)) + done, bytes - done};
        return process_vm_readv(pid, &l, 1, &r, 1, 0);
      },
      bytes);
}

int cma_write(pid_t pid, void* remote, const void* local, size_t bytes) {
  return cma_loop(
      [&](size_t done) {
        struct iovec l = {const_cast<char*>(static_cast<const char*>(local)) + done, bytes - done};
        struct iovec r = {static_cast<char*>(remote) + done, bytes - done};
        return process_vm_writev(pid, &l, 1, &r, 1, 0);
      },
      bytes);
}

}  // namespace tandem
