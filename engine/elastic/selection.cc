#include "elastic/selection.h"

#include <algorithm>
#include <map>

namespace tandem {
namespace elastic {

Selection select_members(const std::vector<Candidate>& candidates,
                         const std::vector<std::pair<uint32_t, uint32_t>>& unreachable,
                         const std::set<uint32_t>& silent, size_t max_size) {
  std::map<uint32_t, std::string> node_of;
  std::vector<std::string> nodes;  // in order of their first candidate
  for (const Candidate& c : candidates) {
    node_of[c.member] = c.node;
    if (std::find(nodes.begin(), nodes.end(), c.node) == nodes.end()) nodes.push_back(c.node);
  }
  std::set<std::pair<std::string, std::string>> cut;  // unordered node pairs, stored both ways
  for (const auto& [a, b] : unreachable) {
    auto na = node_of.find(a), nb = node_of.find(b);
    if (na == node_of.end() || nb == node_of.end() || na->second == nb->second) continue;
    cut.insert({na->second, nb->second});
    cut.insert({nb->second, na->second});
  }
  std::set<std::string> silent_nodes;
  for (uint32_t m : silent)
    if (auto it = node_of.find(m); it != node_of.end()) silent_nodes.insert(it->second);

  Selection out;
  std::vector<std::string> kept_nodes;
  for (const std::string& n : nodes) {
    bool ok = !silent_nodes.count(n);
    for (const std::string& k : kept_nodes)
      if (cut.count({n, k})) ok = false;
    if (ok) kept_nodes.push_back(n);
    else out.excluded_nodes.push_back(n);
  }
  for (const Candidate& c : candidates) {
    if (std::find(kept_nodes.begin(), kept_nodes.end(), c.node) == kept_nodes.end()) continue;
    (out.kept.size() < max_size ? out.kept : out.deferred).push_back(c.member);
  }
  return out;
}

std::vector<uint32_t> probe_targets(const std::vector<Candidate>& candidates, uint32_t member) {
  std::string mine;
  for (const Candidate& c : candidates)
    if (c.member == member) mine = c.node;
  std::vector<uint32_t> out;
  std::set<std::string> seen{mine};
  for (const Candidate& c : candidates)
    if (seen.insert(c.node).second) out.push_back(c.member);
  return out;
}

}  // namespace elastic
}  // namespace tandem
