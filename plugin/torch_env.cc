#include "torch_env.h"

#include <dlfcn.h>

#include <charconv>
#include <utility>
#include <vector>

#include "plugin_error.h"

namespace tandem::plugin {
namespace {

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

uint64_t to_number(std::string_view digits) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    throw PluginError("number '" + std::string(digits) + "' out of range");
  }
  return v;
}

// One bracket group of a host name: the numbers it stands for, printed with
// the zero padding of each range's lower bound.
struct Range {
  uint64_t low = 0, high = 0;
  size_t width = 0;
};

struct Group {
  std::vector<Range> ranges;
  uint64_t count() const {
    uint64_t n = 0;
    for (const auto& r : ranges) n += r.high - r.low + 1;
    return n;
  }
  std::string at(uint64_t i) const {
    for (const auto& r : ranges) {
      const uint64_t n = r.high - r.low + 1;
      if (i < n) {
        std::string s = std::to_string(r.low + i);
        if (s.size() < r.width) s.insert(0, r.width - s.size(), '0');
        return s;
      }
      i -= n;
    }
    return {};  // not reached: i < count()
  }
};

// A host expression: literal pieces and bracket groups, alternating
// (pieces.size() == groups.size() + 1).
struct HostPattern {
  std::vector<std::string> pieces;
  std::vector<Group> groups;
};

[[noreturn]] void bad_hostlist(std::string_view whole, const std::string& why) {
  throw PluginError("SLURM_STEP_NODELIST='" + std::string(whole) + "' is not a Slurm host list (" +
                    why + ")");
}

HostPattern parse_host(std::string_view item, std::string_view whole) {
  HostPattern p;
  p.pieces.emplace_back();
  size_t i = 0;
  while (i < item.size()) {
    const char c = item[i];
    if (c == ']') bad_hostlist(whole, "']' without '['");
    if (c != '[') {
      p.pieces.back() += c;
      ++i;
      continue;
    }
    const size_t close = item.find(']', i);
    if (close == std::string_view::npos) bad_hostlist(whole, "'[' without ']'");
    const std::string_view body = item.substr(i + 1, close - i - 1);
    if (body.find('[') != std::string_view::npos) bad_hostlist(whole, "nested '['");
    Group g;
    size_t start = 0;
    while (start <= body.size()) {
      size_t end = body.find(',', start);
      if (end == std::string_view::npos) end = body.size();
      const std::string_view range = body.substr(start, end - start);
      const size_t dash = range.find('-');
      const std::string_view lo = range.substr(0, dash);
      const std::string_view hi = dash == std::string_view::npos ? lo : range.substr(dash + 1);
      if (!all_digits(lo) || !all_digits(hi))
        bad_hostlist(whole, "range '" + std::string(range) + "'");
      Range r{to_number(lo), to_number(hi), lo.size()};
      if (r.high < r.low) bad_hostlist(whole, "range '" + std::string(range) + "' runs backwards");
      g.ranges.push_back(r);
      start = end + 1;
    }
    p.groups.push_back(std::move(g));
    p.pieces.emplace_back();
    i = close + 1;
  }
  if (p.groups.empty() && p.pieces[0].empty()) bad_hostlist(whole, "empty host name");
  return p;
}

void set_unless_user_set(TaskEnv& env, const std::string& name, const std::string& value) {
  const auto current = env.get(name);
  if (current && !current->empty()) return;
  env.set(name, value);
}

}  // namespace

uint16_t derived_master_port(uint32_t job_id, uint32_t step_id) {
  return static_cast<uint16_t>(kPortBase + (job_id % kJobSlots) * kStepSlots +
                               step_id % kStepSlots);
}

uint16_t first_reserved_port(std::string_view resv_ports) {
  size_t n = 0;
  while (n < resv_ports.size() && resv_ports[n] >= '0' && resv_ports[n] <= '9') ++n;
  const bool ok =
      n > 0 && n <= 5 && (n == resv_ports.size() || resv_ports[n] == '-' || resv_ports[n] == ',');
  const uint64_t port = ok ? to_number(resv_ports.substr(0, n)) : 0;
  if (!ok || port == 0 || port > 65535) {
    throw PluginError("SLURM_STEP_RESV_PORTS='" + std::string(resv_ports) +
                      "' is not a port list like '12000-12003'");
  }
  return static_cast<uint16_t>(port);
}

uint32_t rank0_node(std::string_view mapping) {
  constexpr std::string_view kPrefix = "(vector,(";
  size_t n = 0;
  if (mapping.substr(0, kPrefix.size()) == kPrefix) {
    while (kPrefix.size() + n < mapping.size() && mapping[kPrefix.size() + n] >= '0' &&
           mapping[kPrefix.size() + n] <= '9') {
      ++n;
    }
  }
  if (n == 0 || n > 9 || kPrefix.size() + n >= mapping.size() ||
      mapping[kPrefix.size() + n] != ',') {
    throw PluginError("SLURM_PMIX_MAPPING_SERV='" + std::string(mapping) +
                      "' is not Slurm's process mapping '(vector,(node,nodes,tasks),...)'");
  }
  return static_cast<uint32_t>(to_number(mapping.substr(kPrefix.size(), n)));
}

std::string nth_host(std::string_view list, uint32_t n) {
  // The whole list is checked, whichever host is asked for.
  if (list.empty()) bad_hostlist(list, "empty");
  std::vector<std::pair<HostPattern, uint64_t>> items;  // pattern, host count
  uint64_t total = 0;
  for (size_t start = 0; start <= list.size();) {
    // Split at commas outside brackets.
    size_t end = start;
    int depth = 0;
    while (end < list.size() && (list[end] != ',' || depth > 0)) {
      if (list[end] == '[') ++depth;
      if (list[end] == ']') --depth;
      ++end;
    }
    HostPattern p = parse_host(list.substr(start, end - start), list);
    uint64_t count = 1;
    for (const auto& g : p.groups) {
      count *= g.count();
      if (count > (1u << 24)) bad_hostlist(list, "more than 2^24 hosts");
    }
    total += count;
    if (total > (1u << 24)) bad_hostlist(list, "more than 2^24 hosts");
    items.emplace_back(std::move(p), count);
    start = end + 1;
  }
  uint64_t remaining = n;
  for (const auto& [p, count] : items) {
    if (remaining >= count) {
      remaining -= count;
      continue;
    }
    // Leftmost group varies slowest.
    std::vector<uint64_t> index(p.groups.size());
    uint64_t rest = remaining;
    for (size_t k = p.groups.size(); k-- > 0;) {
      index[k] = rest % p.groups[k].count();
      rest /= p.groups[k].count();
    }
    std::string host = p.pieces[0];
    for (size_t k = 0; k < p.groups.size(); ++k) host += p.groups[k].at(index[k]) + p.pieces[k + 1];
    return host;
  }
  throw PluginError("SLURM_STEP_NODELIST='" + std::string(list) + "' names " +
                    std::to_string(total) + " nodes; node " + std::to_string(n) +
                    " (rank 0's) is not among them");
}

TorchRendezvous torch_rendezvous(const TaskEnv& env, uint32_t job_id, uint32_t step_id,
                                 const std::function<std::string(const std::string&)>& address_of) {
  const auto nodes = env.get("SLURM_STEP_NODELIST");
  if (!nodes) throw PluginError("SLURM_STEP_NODELIST is missing from the job environment");
  const auto mapping = env.get("SLURM_PMIX_MAPPING_SERV");
  TorchRendezvous r;
  r.master_node = nth_host(*nodes, mapping && !mapping->empty() ? rank0_node(*mapping) : 0);
  r.master_addr = address_of(r.master_node);
  const auto resv = env.get("SLURM_STEP_RESV_PORTS");
  r.master_port =
      resv && !resv->empty() ? first_reserved_port(*resv) : derived_master_port(job_id, step_id);
  return r;
}

void export_torch_env(const TaskIdentity& id, const TorchRendezvous& r, TaskEnv& env) {
  set_unless_user_set(env, "MASTER_ADDR", r.master_addr);
  set_unless_user_set(env, "MASTER_PORT", std::to_string(r.master_port));
  set_unless_user_set(env, "RANK", std::to_string(id.rank));
  set_unless_user_set(env, "WORLD_SIZE", std::to_string(id.size));
  set_unless_user_set(env, "LOCAL_RANK", std::to_string(id.local_rank));
  set_unless_user_set(env, "LOCAL_WORLD_SIZE", std::to_string(id.local_size));
  const auto nic = env.get("TANDEM_TCP_IFNAME");
  if (nic && !nic->empty()) set_unless_user_set(env, "GLOO_SOCKET_IFNAME", *nic);
}

std::string slurm_node_address(const std::string& node) {
  // Internal to Slurm (src/common/read_config.h), exported by libslurmfull,
  // which srun and slurmstepd link: char *slurm_conf_get_address(const char
  // *node_name) returns an xmalloc'd copy of NodeAddr, or NULL.
  using GetAddress = char* (*)(const char*);
  using Free = void (*)(void*);
  auto get = reinterpret_cast<GetAddress>(dlsym(RTLD_DEFAULT, "slurm_conf_get_address"));
  if (!get) return node;
  char* address = get(node.c_str());
  if (!address) return node;
  std::string out = address;
  if (auto release = reinterpret_cast<Free>(dlsym(RTLD_DEFAULT, "slurm_xfree_ptr")))
    release(address);
  return out.empty() ? node : out;
}

}  // namespace tandem::plugin
