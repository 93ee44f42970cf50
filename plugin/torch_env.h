// torch.distributed's env:// variables for an enabled step, so that an
// unmodified DDP script's init_process_group() works under plain
// `srun --horovod=on` (no torchrun), with the binding Tandem gives:
//
//   MASTER_ADDR        the address Slurm itself uses for rank 0's node (its
//                      NodeAddr; the node name where that cannot be read)
//   MASTER_PORT        the step's first reserved port when Slurm reserves
//                      ports (MpiParams=ports=..., SLURM_STEP_RESV_PORTS),
//                      else derived from the job and step ids (below)
//   RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE   = the Horovod identity
//   GLOO_SOCKET_IFNAME the NIC the binding chose (TANDEM_TCP_IFNAME), so gloo
//                      does not fall back to loopback where the node's
//                      hostname does not resolve
//
// Each variable the user already set (present and not empty in the task's
// environment) is left as it is: a user value wins, per variable.
//
// Rank 0's node: the first node of Slurm's PMIx process mapping
// (SLURM_PMIX_MAPPING_SERV, "(vector,(node,nodes,tasks),...)" in rank order),
// so -m arbitrary is right too; node 0 of the step without it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "identity.h"
#include "task_env.h"

namespace tandem::plugin {

// MASTER_PORT without reserved ports: kPortBase + (job_id mod kJobSlots) *
// kStepSlots + (step_id mod kStepSlots), i.e. 16384..32767, below Linux's
// default ephemeral range (32768-60999) so that no outgoing connection holds
// it. Two steps get the same port only if their job ids are equal modulo
// 1024 and their step ids equal modulo 16: steps running at the same time
// with rank 0 on the same node never collide while their job ids differ by
// less than 1024 and, within one job, their step ids by less than 16.
inline constexpr uint32_t kPortBase = 16384;
inline constexpr uint32_t kJobSlots = 1024;
inline constexpr uint32_t kStepSlots = 16;
uint16_t derived_master_port(uint32_t job_id, uint32_t step_id);

// The first port of SLURM_STEP_RESV_PORTS ("12000-12003", "12000,12005").
// Throws PluginError on anything else.
uint16_t first_reserved_port(std::string_view resv_ports);

// The node index of rank 0 from SLURM_PMIX_MAPPING_SERV. Throws PluginError
// when the text is not such a mapping.
uint32_t rank0_node(std::string_view pmix_mapping);

// The n-th host (0-based) of a Slurm host list such as "node[01-03,7],gpu5"
// (ranges keep their zero padding; several bracket groups in one name expand
// leftmost slowest, as Slurm's hostlist does). Throws PluginError when the
// list is malformed or has n hosts or fewer.
std::string nth_host(std::string_view hostlist, uint32_t n);

struct TorchRendezvous {
  std::string master_node;  // Slurm node name of rank 0's node
  std::string master_addr;  // what MASTER_ADDR is set to
  uint16_t master_port = 0;
};

// The step-wide part, from the job environment (SLURM_STEP_NODELIST,
// SLURM_PMIX_MAPPING_SERV, SLURM_STEP_RESV_PORTS). `address_of` maps a node
// name to the address to give (slurm_node_address in the plugin). Throws
// PluginError naming what is missing or malformed.
TorchRendezvous torch_rendezvous(const TaskEnv& job_env, uint32_t job_id, uint32_t step_id,
                                 const std::function<std::string(const std::string&)>& address_of);

// Sets the variables above in the task environment, keeping user values.
// Call after the binding (GLOO_SOCKET_IFNAME follows TANDEM_TCP_IFNAME).
void export_torch_env(const TaskIdentity& id, const TorchRendezvous& r, TaskEnv& env);

// NodeAddr of a Slurm node, read from the configuration of the Slurm process
// this plugin is loaded into (slurmstepd's slurm_conf_get_address, the
// lookup its own PMIx and message forwarding use); `node` itself when that
// is not available or the node is unknown. Call it in slurmstepd before the
// tasks are forked (slurm_spank_user_init): it takes Slurm's config lock.
std::string slurm_node_address(const std::string& node);

}  // namespace tandem::plugin
