// A rank's client of the rendezvous store (bootstrap/tcp_store_client.h)
// reading what the store answers: the input is every byte the process that
// hosts the store sends back. The client says HELLO, then asks SET, GET,
// GATHER and DEL in turn until the answers run out or one is refused: each
// ends in a value, a miss or one Error, never a crash or an allocation the
// input sized beyond its own length.
#include <chrono>
#include <thread>

#include "bootstrap/tcp_store_client.h"
#include "common/errors.h"
#include "fuzz_target.h"
#include "loopback.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static tandem::fuzz::FakeServer store;
  std::thread host([&] { store.serve_once(data, size); });
  try {
    const auto deadline = tandem::Clock::now() + std::chrono::seconds(20);
    tandem::TcpStoreClient client({"127.0.0.1", store.port()}, kFuzzToken, 0, 2, deadline);
    for (int round = 0; round < 64; ++round) {
      client.set("s0/k" + std::to_string(round), {1, 2, 3}, deadline);
      (void)client.get("s0/k", deadline);
      if (auto values = client.gather("s0/ag/", 2, deadline))
        if (values->size() != 2) fuzz_fail("GATHER of 2 answered another count of values");
      client.del("s0/k");
    }
  } catch (const tandem::Error&) {
    // The one clear error a rank reports for a broken store.
  }
  host.join();
  return 0;
}
