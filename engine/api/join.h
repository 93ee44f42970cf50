// How tandem_init joins the job: the bootstrap the process was launched with
// (bootstrap_from_environment) and, for jobs on several nodes, TCP between
// nodes (connect_tcp). Kept apart so the rest of the API never names a
// concrete bootstrap or transport.
#pragma once

#include <functional>
#include <memory>

#include "communicator/communicator.h"
#include "transport/round_relay.h"

namespace tandem {

// Joins the job and runs `start` on it (the runtime starts there). Under an
// elastic launch (TANDEM_ELASTIC_ADDR, elastic/client.h) it joins the next
// generation through the membership service; a generation that fails while
// it forms (a member died or stopped answering meanwhile) is left and the
// next one joined. Throws AbortedError with the service's message when this
// process was removed from the job or the job failed (reset limit, minimum
// size).
std::unique_ptr<Communicator> join_job(const std::function<void(Communicator&)>& start);

// The transport between nodes that join_job() uses, for the Communicators
// the runtime builds over the same job (api/runtime_api.cc).
TransportFactory job_transport();
// The relay that carries the runtime's round requests between nodes over
// the same network (transport/round_relay.h).
RoundRelayFactory job_round_relay();

// The elastic part of join_job (elastic_join.cc).
std::unique_ptr<Communicator> join_elastic(const std::function<void(Communicator&)>& start);

}  // namespace tandem
