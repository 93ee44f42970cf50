#include "api/join.h"

#include "bootstrap/from_environment.h"
#include "transport/tcp/tcp_transport.h"

namespace tandem {

std::unique_ptr<Communicator> join_job() {
  const CommunicatorOptions options = CommunicatorOptions::from_environment();
  return std::make_unique<Communicator>(bootstrap_from_environment(), connect_tcp, options);
}

TransportFactory job_transport() { return connect_tcp; }

}  // namespace tandem
