#include "api/join.h"

#include "bootstrap/from_environment.h"
#include "elastic/client.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/wake_relay.h"

namespace tandem {

std::unique_ptr<Communicator> join_job(const std::function<void(Communicator&)>& start) {
  if (elastic::ElasticClient::requested()) return join_elastic(start);
  CommunicatorOptions options = CommunicatorOptions::from_environment();
  options.setup_log_level = log::Level::kInfo;  // TANDEM_LOG=info describes the world's set-up
  auto comm =
      std::make_unique<Communicator>(bootstrap_from_environment(), job_transport(), options);
  start(*comm);
  return comm;
}

TransportFactory job_transport() {
  return [](Bootstrap& b, const std::vector<int>& members, std::chrono::milliseconds timeout,
            const std::vector<int>& planned) { return connect_tcp(b, members, timeout, planned); };
}

RoundRelayFactory job_round_relay() { return connect_wake_relay; }

}  // namespace tandem
