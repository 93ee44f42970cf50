#include "transport/tcp/descriptors.h"

#include <dirent.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdint>

#include "common/errors.h"

namespace tandem {
namespace tcp {
namespace {

size_t count_open() {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  size_t n = 0;
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n > 0 ? n - 1 : 0;  // the directory's own descriptor
}

size_t as_size(rlim_t v) { return v == RLIM_INFINITY ? SIZE_MAX : static_cast<size_t>(v); }

std::string limit_text(size_t v) { return v == SIZE_MAX ? "unlimited" : std::to_string(v); }

const char* kRaise =
    "Raise the soft limit before the job starts: `ulimit -n <n>` in the launching shell or "
    "job script (up to the hard limit), or, under Slurm, the limit srun propagates "
    "(PropagateResourceLimits) and slurmd's own (LimitNOFILE in its systemd unit)";

}  // namespace

DescriptorLimit descriptor_limit() {
  DescriptorLimit l;
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    l.soft = as_size(rl.rlim_cur);
    l.hard = as_size(rl.rlim_max);
  } else {
    l.soft = l.hard = SIZE_MAX;
  }
  l.open = count_open();
  return l;
}

void check_descriptor_budget(const std::string& what, size_t needed, const std::string& why) {
  const DescriptorLimit l = descriptor_limit();
  if (l.soft == SIZE_MAX || l.open + needed <= l.soft) return;
  throw SystemError(what + ": this rank needs " + std::to_string(needed) +
                        " more file descriptors (" + why + "), but " + std::to_string(l.open) +
                        " of the " + std::to_string(l.soft) +
                        " it may hold are open (RLIMIT_NOFILE soft limit " + limit_text(l.soft) +
                        ", hard limit " + limit_text(l.hard) + "). " + kRaise +
                        "; docs/tcp.md lists how many a rank needs",
                    EMFILE);
}

std::string descriptor_advice(int err) {
  if (err == ENFILE) return " (the whole system is out of file descriptors: fs.file-max)";
  if (err != EMFILE) return "";
  const DescriptorLimit l = descriptor_limit();
  return " (RLIMIT_NOFILE soft limit " + limit_text(l.soft) + ", hard limit " + limit_text(l.hard) +
         ", " + std::to_string(l.open) + " open. " + kRaise + ")";
}

}  // namespace tcp
}  // namespace tandem
