#include "task_setup.h"

#include "container_env.h"
#include "path_list.h"

namespace tandem::plugin {

void export_task(const Config& config, const TaskIdentity& id,
                 const std::optional<std::string>& nic, TaskEnv& env) {
  env.set("HOROVOD_RANK", std::to_string(id.rank));
  env.set("HOROVOD_SIZE", std::to_string(id.size));
  env.set("HOROVOD_LOCAL_RANK", std::to_string(id.local_rank));
  env.set("HOROVOD_LOCAL_SIZE", std::to_string(id.local_size));
  env.set("HOROVOD_CROSS_RANK", std::to_string(id.cross_rank));
  env.set("HOROVOD_CROSS_SIZE", std::to_string(id.cross_size));
  env.set("HOROVOD_HOSTNAME", id.hostname);
  env.set("TANDEM_NODE_ID", std::to_string(id.node_id));
  env.set("TANDEM_NNODES", std::to_string(id.nnodes));
  env.set("TANDEM_LIBRARY", config.engine_path);
  if (nic) env.set("TANDEM_TCP_IFNAME", *nic);

  // ld.so splits LD_PRELOAD at ':' and ' '.
  // The preload shim, not the engine: it never stops a program (container_env.h).
  env.set("LD_PRELOAD",
          prepend_unique(preload_path(config), env.get("LD_PRELOAD").value_or(""), ": "));
  if (!config.python_path.empty()) {
    env.set("PYTHONPATH", prepend_unique(config.python_path, env.get("PYTHONPATH").value_or("")));
  }
}

std::string describe_task(const TaskIdentity& id, const TaskEnv& env, const std::string& cpus,
                          const std::string& binding_summary) {
  auto gpus = env.get("CUDA_VISIBLE_DEVICES");
  auto nic = env.get("TANDEM_TCP_IFNAME");
  return "tandem: rank " + std::to_string(id.rank) + "/" + std::to_string(id.size) + " node " +
         id.hostname + " local_rank " + std::to_string(id.local_rank) + "/" +
         std::to_string(id.local_size) + " cross_rank " + std::to_string(id.cross_rank) + "/" +
         std::to_string(id.cross_size) + " gpus " + (gpus && !gpus->empty() ? *gpus : "none") +
         " cpus " + cpus + " nic " + (nic ? *nic : "unknown") + " " + binding_summary;
}

}  // namespace tandem::plugin
