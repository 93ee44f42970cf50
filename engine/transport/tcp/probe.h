// Can this rank reach those peers over TCP, on the address its transport
// would use? The elastic membership service (engine/elastic/) asks that
// before it forms a generation, so that a node cut off from the others (a
// cut link, a dead switch port) is left out instead of failing the new
// generation's first collective after TANDEM_TIMEOUT. A probe is a bare TCP
// connect, closed at once: it proves the handshake got through both ways.
#pragma once

#include <chrono>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "transport/tcp/socket.h"

namespace tandem {
namespace tcp {

// Listens on the address connect_tcp would choose between nodes and accepts
// (then closes) every connection until destroyed, on its own thread.
class ProbeListener {
 public:
  ProbeListener();
  ~ProbeListener();
  ProbeListener(const ProbeListener&) = delete;
  ProbeListener& operator=(const ProbeListener&) = delete;
  // The address, in connect_tcp's endpoint encoding (wire.h).
  const Bytes& endpoint() const { return endpoint_; }

 private:
  Fd listener_;
  Fd wake_;
  Bytes endpoint_;
  std::thread thread_;
};

// The indices of the endpoints that could not be connected to within the
// timeout (all tried at once). An endpoint that does not decode counts as
// unreachable.
std::vector<size_t> unreachable(const std::vector<Bytes>& endpoints,
                                std::chrono::milliseconds timeout);

}  // namespace tcp
}  // namespace tandem
