// The elastic membership service (elastic/service.h) reading one connection
// from a rank: the input is every byte the rank sends (HELLO, JOIN, REACH,
// DONE, PONG and the store's requests, or anything else). The service
// expects one rank, so that a JOIN forms a generation and the requests after
// it meet a running job. A fresh service per input, as for the store.
#include <chrono>

#include "elastic/service.h"
#include "fuzz_target.h"
#include "loopback.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tandem::elastic::ServiceSettings settings;
  settings.token = kFuzzToken;
  settings.expected = 1;
  settings.report = [](const std::string&) {};
  tandem::elastic::MembershipService service(std::move(settings));
  tandem::fuzz::converse(service.port(), data, size);
  return 0;
}
