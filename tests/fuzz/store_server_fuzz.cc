// The rendezvous store's server (bootstrap/tcp_store_server.h) reading one
// connection from a peer: the input is every byte the peer sends, frames or
// not. A real server per input (its thread, its socket), so that what an
// input leaves (keys, a lost rank) does not change how the next one is read.
#include "bootstrap/tcp_store_server.h"
#include "fuzz_target.h"
#include "loopback.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tandem::TcpStoreServer server(kFuzzToken);
  tandem::fuzz::converse(server.port(), data, size);
  return 0;
}
