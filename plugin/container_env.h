// What a task needs so that the same step also works inside the user's
// container (docs/containers.md):
//
//   LD_PRELOAD            the preload shim (libtandem-preload.so, beside the
//                         engine), never the engine itself: the shim loads in
//                         any image and loads the engine where it can
//   TANDEM_PYTHONPATH     the python folder; the shim puts it back on
//                         PYTHONPATH where a runtime replaced PYTHONPATH with
//                         the image's own
//   APPTAINER_BIND,       the engine's and python folders, appended: Apptainer
//   SINGULARITY_BIND      and Singularity then bind them at the same paths
//   TANDEM_RENDEZVOUS_ADDR, TANDEM_RANK, TANDEM_SIZE
//                         the TCP store the engine joins when PMIx cannot be
//                         used inside the container (rank 0 serves it on its
//                         node, port below); its secret,
//                         TANDEM_RENDEZVOUS_TOKEN, is drawn by srun
#pragma once

#include <cstdint>
#include <string>

#include "config.h"
#include "identity.h"
#include "task_env.h"

namespace tandem::plugin {

// libtandem-preload.so in the engine's folder.
std::string preload_path(const Config& config);

// The folders a container must see: the engine's and the python one (when
// configured and not inside the engine's).
std::string engine_dir(const Config& config);

// The TCP store's port: kStorePortBase + (job_id mod 256) * 16 + (step_id
// mod 16), 12288..16383, below the MASTER_PORT range (torch_env.h) so that
// a step using both never collides with itself. Only rank 0's node listens
// on it, and only when PMIx cannot be used.
inline constexpr uint32_t kStorePortBase = 12288;
uint16_t store_port(uint32_t job_id, uint32_t step_id);

// A fresh per-step secret (32 hex digits) for TANDEM_RENDEZVOUS_TOKEN.
std::string random_token();

// Appends `entry` to a comma-separated bind list unless it is there already
// (as "entry" or "entry:..." ).
std::string append_bind(const std::string& list, const std::string& entry);

// Sets the variables above (but LD_PRELOAD, which export_task sets) in the
// task environment. `master_addr` is rank 0's node address (torch_env.h).
// The rendezvous variables are set only when srun drew a token.
void export_container_env(const Config& config, const TaskIdentity& id,
                          const std::string& master_addr, uint32_t job_id, uint32_t step_id,
                          TaskEnv& env);

}  // namespace tandem::plugin
