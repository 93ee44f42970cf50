#include "bootstrap/node_domain.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "bootstrap/env.h"
#include "common/errors.h"

namespace tandem {

std::string node_name_from_environment() {
  for (const char* name : {"TANDEM_NODE_NAME", "SLURMD_NODENAME"}) {
    if (auto v = env::get(name)) {
      if (v->find('\n') != std::string::npos)
        throw BootstrapError(std::string(name) + " must not contain a newline");
      return *v;
    }
  }
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) throw SystemError("gethostname", errno);
  return host;
}

std::string node_local_domain() {
  struct stat st {};
  const unsigned long long shm =
      stat("/dev/shm", &st) == 0 ? static_cast<unsigned long long>(st.st_dev) : 0;
  char link[64] = {};
  const ssize_t n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
  const std::string pid = n > 0 ? std::string(link, static_cast<size_t>(n)) : "unknown";
  return "shm=" + std::to_string(shm) + ",pid=" + pid;
}

}  // namespace tandem
