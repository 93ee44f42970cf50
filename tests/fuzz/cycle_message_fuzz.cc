// What a rank reads from every other rank each cycle (runtime/cycle_message.h):
// the cycle message of the negotiation's allgather and the reduced bytes of
// the bit round that comes before it. Through the public parse functions
// only, so that the target follows the message as it grows fields. A message
// parsed and written again is the canonical form, and that form reads back
// to itself.
#include <string>
#include <vector>

#include "common/errors.h"
#include "fuzz_target.h"
#include "runtime/cycle_message.h"

using namespace tandem;
using tandem::runtime::CycleMessage;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Bytes bytes(data, data + size);
  try {
    const Bytes canonical = CycleMessage::parse(bytes).serialize();
    if (CycleMessage::parse(canonical).serialize() != canonical)
      fuzz_fail("a cycle message written again does not read back to itself");
    (void)runtime::full_round_needed(CycleMessage::parse(canonical));
  } catch (const Error&) {
    // A malformed message: the one error the rank reports.
  }

  // The bit round, for the span it must have and for one it must not.
  const std::vector<uint8_t> reduced(data, data + size);
  const size_t span = size > 0 ? (size - 1) / 2 : 0;
  for (size_t s : {span, span + 1}) {
    try {
      const runtime::BitRound r = runtime::decode_bit_round(reduced, s);
      if (reduced.size() != 1 + 2 * s) fuzz_fail("a bit round of the wrong length was accepted");
      for (size_t bit = 0; bit < s; ++bit)
        if (runtime::test_bit(r.ready_somewhere, bit) != (reduced[1 + bit] != 0))
          fuzz_fail("a bit round's ready bit was lost");
    } catch (const Error&) {
      if (reduced.size() == 1 + 2 * s) fuzz_fail("a bit round of the right length was refused");
    }
  }
  return 0;
}
