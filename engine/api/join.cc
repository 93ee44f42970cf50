#include "api/join.h"

#include "bootstrap/from_environment.h"
#include "elastic/client.h"
#include "transport/tcp/tcp_transport.h"

namespace tandem {

std::unique_ptr<Communicator> join_job(const std::function<void(Communicator&)>& start) {
  if (elastic::ElasticClient::requested()) return join_elastic(start);
  const CommunicatorOptions options = CommunicatorOptions::from_environment();
  auto comm = std::make_unique<Communicator>(bootstrap_from_environment(), job_transport(), options);
  start(*comm);
  return comm;
}

TransportFactory job_transport() {
  return [](Bootstrap& b, const std::vector<int>& members, std::chrono::milliseconds timeout,
            const std::vector<int>& planned) { return connect_tcp(b, members, timeout, planned); };
}

}  // namespace tandem
