// How the planner binds. Every field has its default here; the plugin fills it
// from plugstack.conf keys and tandem-bind from its flags, both through
// parse_policy_value() so that the spelling of values lives in one place.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tandem::planner {

enum class PolicyKind {
  Closest,  // GPU, CPUs and NIC chosen by locality (default)
  None,     // no binding at all; identity and injection still happen
};

enum class Visible {
  All,  // every GPU of the step visible, the task's own at index local_rank
  Own,  // only the task's own GPU(s)
};

struct Policy {
  PolicyKind kind = PolicyKind::Closest;
  Visible visible = Visible::All;
  bool membind = false;           // bind memory to the task's NUMA domain
  std::vector<std::string> nics;  // NICs the planner may choose (names); empty: any
};

// Sets one field from its key and text value:
//   policy=closest|none   visible=all|own   membind=on|off   nics=NAME[,NAME...]|any
// Throws PlanError naming the key, the value and the allowed values.
void parse_policy_value(Policy& policy, std::string_view key, std::string_view value);

const char* to_string(PolicyKind kind);
const char* to_string(Visible visible);

}  // namespace tandem::planner
