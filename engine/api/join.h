// How tandem_init joins the job: the bootstrap the process was launched with
// (bootstrap_from_environment) and, for jobs on several nodes, TCP between
// nodes (connect_tcp). Kept apart so the rest of the API never names a
// concrete bootstrap or transport.
#pragma once

#include <memory>

#include "communicator/communicator.h"

namespace tandem {

std::unique_ptr<Communicator> join_job();

// The transport between nodes that join_job() uses, for the Communicators
// the runtime builds over the same job (api/runtime_api.cc).
TransportFactory job_transport();

}  // namespace tandem
