#include "node_facts.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <unistd.h>

#include <set>

namespace tandem::plugin {

std::string allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return "unknown";
  std::string out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int last = c;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    if (!out.empty()) out += ',';
    out += std::to_string(c);
    if (last > c) out += "-" + std::to_string(last);
    c = last;
  }
  return out.empty() ? "none" : out;
}

std::optional<std::string> single_nic() {
  struct ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return std::nullopt;
  std::set<std::string> names;
  for (auto* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    if ((a->ifa_flags & IFF_LOOPBACK) || !(a->ifa_flags & IFF_UP)) continue;
    names.insert(a->ifa_name);
  }
  freeifaddrs(list);
  if (names.size() != 1) return std::nullopt;
  return *names.begin();
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

}  // namespace tandem::plugin
