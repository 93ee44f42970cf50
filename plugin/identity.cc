#include "identity.h"

#include <charconv>

#include "plugin_error.h"

namespace tandem::plugin {
namespace {

uint32_t parse_count(std::string_view digits, std::string_view whole) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
    throw PluginError("SLURM_STEP_TASKS_PER_NODE='" + std::string(whole) +
                      "' is not a list like '2(x3),1'");
  }
  return v;
}

}  // namespace

std::vector<uint32_t> parse_tasks_per_node(std::string_view text) {
  std::vector<uint32_t> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(start, end - start);
    uint32_t repeat = 1;
    const size_t paren = item.find("(x");
    if (paren != std::string_view::npos) {
      if (item.back() != ')') parse_count("", text);  // throws
      repeat = parse_count(item.substr(paren + 2, item.size() - paren - 3), text);
      item = item.substr(0, paren);
    }
    const uint32_t count = parse_count(item, text);
    if (repeat == 0 || repeat > 1u << 20) parse_count("", text);
    out.insert(out.end(), repeat, count);
    start = end + 1;
  }
  if (out.empty()) parse_count("", text);
  return out;
}

TaskIdentity compute_identity(const StepLayout& l, uint32_t rank, uint32_t local_rank,
                              std::string hostname) {
  uint64_t total = 0;
  for (auto n : l.tasks_per_node) total += n;
  if (l.tasks_per_node.size() != l.nnodes || total != l.size || l.node_id >= l.nnodes ||
      rank >= l.size || local_rank >= l.tasks_per_node[l.node_id]) {
    throw PluginError("inconsistent step layout from Slurm: " + std::to_string(l.nnodes) +
                      " nodes, " + std::to_string(l.size) + " tasks, " +
                      std::to_string(l.tasks_per_node.size()) + " per-node counts adding up to " +
                      std::to_string(total) + ", node " + std::to_string(l.node_id) + ", rank " +
                      std::to_string(rank) + ", local rank " + std::to_string(local_rank));
  }
  TaskIdentity id;
  id.rank = rank;
  id.size = l.size;
  id.local_rank = local_rank;
  id.local_size = l.tasks_per_node[l.node_id];
  id.node_id = l.node_id;
  id.nnodes = l.nnodes;
  id.hostname = std::move(hostname);
  for (uint32_t n = 0; n < l.nnodes; ++n) {
    if (l.tasks_per_node[n] > local_rank) {
      if (n < l.node_id) ++id.cross_rank;
      ++id.cross_size;
    }
  }
  return id;
}

}  // namespace tandem::plugin
