// What an enabled step puts in each task's environment, independent of Slurm
// (remote.cc gathers the inputs, tests call this with a MapTaskEnv):
//
//   HOROVOD_RANK, HOROVOD_SIZE, HOROVOD_LOCAL_RANK, HOROVOD_LOCAL_SIZE,
//   HOROVOD_CROSS_RANK, HOROVOD_CROSS_SIZE, HOROVOD_HOSTNAME   (identity.h)
//   TANDEM_NODE_ID, TANDEM_NNODES    this node's index among the step's nodes
//   TANDEM_LIBRARY                   the engine (python's tandem loads it)
//   TANDEM_TCP_IFNAME                the node's only non-loopback NIC, if one
//   LD_PRELOAD                       the preload shim first, user's entries kept
//   PYTHONPATH                       python dir first (when configured)
#pragma once

#include <optional>
#include <string>

#include "config.h"
#include "identity.h"
#include "task_env.h"

namespace tandem::plugin {

void export_task(const Config& config, const TaskIdentity& id,
                 const std::optional<std::string>& nic, TaskEnv& env);

// The verbose line: "tandem: rank 0/4 node node1 local_rank 0/2 cross_rank 0/2
// gpus 0,1 cpus 0-7 nic eth0 binding: ...".
std::string describe_task(const TaskIdentity& id, const TaskEnv& env, const std::string& cpus,
                          const std::string& binding_summary);

}  // namespace tandem::plugin
