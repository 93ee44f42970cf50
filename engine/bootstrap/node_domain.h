// Which ranks of a node can use the node-local transport together.
//
// Ranks on one node share memory through files in /dev/shm and watch each
// other by process id (peer liveness, single-copy reads). Inside containers
// neither is a given: runc and Podman give every container its own /dev/shm
// and PID namespace unless told otherwise, and a container's host name is
// not the node's. So a node is named by Slurm (SLURMD_NODENAME), and the
// ranks of a node form one shared-memory group only when they see the same
// /dev/shm and the same PID namespace.
#pragma once

#include <string>

namespace tandem {

// This process's node name: TANDEM_NODE_NAME, else Slurm's SLURMD_NODENAME,
// else gethostname(). Throws BootstrapError for a name with a newline.
std::string node_name_from_environment();

// What must be equal for two processes of one node to share memory: the
// device of the /dev/shm they see (each tmpfs mount has its own) and their
// PID namespace. "shm=<dev>,pid=<namespace inode>".
std::string node_local_domain();

}  // namespace tandem
