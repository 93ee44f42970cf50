#include "policy.h"

#include "errors.h"

namespace tandem::planner {

namespace {

[[noreturn]] void bad_value(std::string_view key, std::string_view value, const char* allowed) {
  throw PlanError("binding option '" + std::string(key) + "': invalid value '" +
                  std::string(value) + "', expected " + allowed);
}

std::vector<std::string> split_names(std::string_view key, std::string_view value) {
  std::vector<std::string> names;
  size_t start = 0;
  while (true) {
    size_t comma = value.find(',', start);
    std::string_view name =
        value.substr(start, comma == std::string_view::npos ? comma : comma - start);
    if (name.empty())
      bad_value(key, value, "a comma-separated list of NIC names (mlx5_0,eth0) or 'any'");
    names.emplace_back(name);
    if (comma == std::string_view::npos) return names;
    start = comma + 1;
  }
}

}  // namespace

void parse_policy_value(Policy& policy, std::string_view key, std::string_view value) {
  if (key == "policy") {
    if (value == "closest") policy.kind = PolicyKind::Closest;
    else if (value == "none") policy.kind = PolicyKind::None;
    else bad_value(key, value, "'closest' or 'none'");
  } else if (key == "visible") {
    if (value == "all") policy.visible = Visible::All;
    else if (value == "own") policy.visible = Visible::Own;
    else bad_value(key, value, "'all' or 'own'");
  } else if (key == "membind") {
    if (value == "on") policy.membind = true;
    else if (value == "off") policy.membind = false;
    else bad_value(key, value, "'on' or 'off'");
  } else if (key == "nics") {
    policy.nics = value == "any" ? std::vector<std::string>{} : split_names(key, value);
  } else {
    throw PlanError("unknown binding option '" + std::string(key) +
                    "', expected one of policy, visible, membind, nics");
  }
}

const char* to_string(PolicyKind kind) { return kind == PolicyKind::Closest ? "closest" : "none"; }
const char* to_string(Visible visible) { return visible == Visible::All ? "all" : "own"; }

}  // namespace tandem::planner
