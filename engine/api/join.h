// How tandem_init joins the job: the bootstrap the process was launched with
// (bootstrap_from_environment) and, for jobs on several nodes, TCP between
// nodes (connect_tcp). Kept apart so the rest of the API never names a
// concrete bootstrap or transport.
#pragma once

#include <memory>

#include "communicator/communicator.h"
#include "transport/round_relay.h"

namespace tandem {

std::unique_ptr<Communicator> join_job();

// The transport between nodes that join_job() uses, for the Communicators
// the runtime builds over the same job (api/runtime_api.cc).
TransportFactory job_transport();
// The relay that carries the runtime's round requests between nodes over
// the same network (transport/round_relay.h).
RoundRelayFactory job_round_relay();

}  // namespace tandem
