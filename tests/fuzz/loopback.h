// One conversation with a server of this process over the loopback: what a
// peer process would do to the rendezvous store or the elastic service.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tandem::fuzz {

// Connects to 127.0.0.1:port, sends the bytes, closes the sending side and
// reads whatever the server answers until it closes the connection: when it
// returns, the server has handled every byte it was going to read. The
// connection ends with a reset, so that none is left in TIME_WAIT over a
// million runs. Calls fuzz_fail when the server neither closes nor answers
// for a long while (a hang is a finding too).
void converse(uint16_t port, const uint8_t* data, size_t size);

// The other side: listens on 127.0.0.1 for one connection at a time and
// answers each with the bytes given, then reads until the client closes
// (what a store or service process would say to a rank).
class FakeServer {
 public:
  FakeServer();
  ~FakeServer();
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;
  uint16_t port() const { return port_; }
  // Accepts one connection, sends `data` on it, closes the sending side and
  // drains the client's requests until it closes. Run on a thread of its own
  // while the client under test talks to it.
  void serve_once(const uint8_t* data, size_t size);

 private:
  int listen_fd_ = -1;
  uint16_t port_ = 0;
};

}  // namespace tandem::fuzz
