#include "bootstrap/identity.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <map>
#include <sys/random.h>

#include "common/errors.h"

namespace tandem {

Identity identity_from_nodes(int rank, const std::vector<std::string>& node_key,
                             std::string job_id) {
  Identity id;
  id.rank = rank;
  id.size = static_cast<int>(node_key.size());
  std::map<std::string, int> index;
  for (const auto& key : node_key) {
    auto it = index.emplace(key, static_cast<int>(index.size())).first;
    id.node_of_rank.push_back(it->second);
  }
  id.cross_size = static_cast<int>(index.size());
  id.cross_rank = id.node_of_rank.at(static_cast<size_t>(rank));
  id.local_rank = 0;
  id.local_size = 0;
  for (int r = 0; r < id.size; ++r) {
    if (id.node_of_rank[r] != id.cross_rank) continue;
    if (r < rank) ++id.local_rank;
    ++id.local_size;
  }
  id.job_id = std::move(job_id);
  return id;
}

std::string random_job_id(const std::string& prefix) {
  unsigned char b[8];
  ssize_t got = 0;
  while (got < static_cast<ssize_t>(sizeof(b))) {
    ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SystemError("getrandom for the job id", errno);
    got += n;
  }
  char hex[17];
  for (int i = 0; i < 8; ++i) std::snprintf(hex + 2 * i, 3, "%02x", b[i]);
  return prefix + "-" + hex;
}

bool valid_job_id(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      return false;
  return true;
}

}  // namespace tandem
