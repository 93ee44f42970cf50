// Facts about the node and the calling process that the task set-up reports.
#pragma once

#include <optional>
#include <string>

namespace tandem::plugin {

// The CPUs the calling process may run on, as a list "0-3,8".
std::string allowed_cpus();

// The name of the node's only up, non-loopback interface with an IPv4
// address; nothing when there are none or several (choosing among several is
// the binding planner's job).
std::optional<std::string> single_nic();

// The host name (for HOROVOD_HOSTNAME when Slurm gives no node name).
std::string host_name();

}  // namespace tandem::plugin
