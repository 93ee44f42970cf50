// What the data transport reads from a peer before and around the data
// (transport/tcp/wire.h): the endpoint blob a rank publishes, the Hello a
// connecting rank sends, the Ack the accepting rank answers, and the length
// in every message's header. Besides not crashing, each reader must agree
// with its writer: what it accepts, the writer gives back byte for byte.
#include <cstring>
#include <string>

#include "fuzz_target.h"
#include "transport/tcp/wire.h"

using namespace tandem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Bytes blob(data, data + size);
  if (auto addr = tcp::decode_endpoint(blob))
    if (tcp::encode_endpoint(*addr) != blob) fuzz_fail("an accepted endpoint does not re-encode");

  // The acceptor checks what has arrived so far: a prefix refused is
  // refused, one accepted is a prefix of an accepted hello.
  tcp::Hello whole;
  const bool is_hello = tcp::check_hello(data, size, &whole).empty();
  for (size_t k = 0; k <= size && k <= tcp::Hello::kSize; ++k) {
    tcp::Hello h;
    if (is_hello && !tcp::check_hello(data, k, &h).empty())
      fuzz_fail("a prefix of an accepted hello was refused");
  }
  if (is_hello && size >= tcp::Hello::kSize) {
    const auto again = tcp::encode_hello(whole);
    if (std::memcmp(again.data(), data, 8 + 4 + 4 + 32) != 0)
      fuzz_fail("an accepted hello does not re-encode");
  }

  int32_t claimed = 0;
  if (size >= 12) std::memcpy(&claimed, data + 8, 4);
  for (int32_t expected : {0, claimed}) {
    const bool is_ack = tcp::check_ack(data, size, expected).empty();
    if (is_ack && (size != tcp::Ack::kSize || tcp::encode_ack(expected)[8] != data[8]))
      fuzz_fail("an accepted ack is not the acceptor's answer");
  }

  if (size >= tcp::kHeaderBytes) {
    uint8_t header[tcp::kHeaderBytes] = {};
    tcp::encode_length(header, tcp::decode_length(data));
    if (std::memcmp(header, data, tcp::kLengthBytes) != 0)
      fuzz_fail("a header's length does not re-encode");
  }
  return 0;
}
