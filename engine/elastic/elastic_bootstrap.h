// The bootstrap of one generation of an elastic job: identity from the
// membership service's assignment, blobs exchanged through the service under
// the generation's keys ("g<generation>/..."), which no other generation
// reads. As TcpBootstrap, operation n writes "ag/<n>/<rank>" or "bc/<n>",
// and a rank deletes its own keys of earlier operations once an allgather
// completes. A member leaving the generation fails every wait at once
// (PeerLostError), instead of letting it run into its timeout.
#pragma once

#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "elastic/client.h"

namespace tandem {
namespace elastic {

class ElasticBootstrap : public Bootstrap {
 public:
  ElasticBootstrap(ElasticClient& client, const Assignment& assignment);
  const Identity& identity() const override { return identity_; }
  std::vector<Bytes> allgather(const Bytes& mine, std::chrono::milliseconds timeout) override;
  Bytes broadcast(const Bytes& value, int root, std::chrono::milliseconds timeout) override;
  uint32_t generation() const { return generation_; }

 private:
  ElasticClient& client_;
  uint32_t generation_;
  Identity identity_;
  std::string prefix_;  // "g<generation>/"
  uint64_t next_op_ = 0;
  std::vector<std::string> own_keys_;
};

}  // namespace elastic
}  // namespace tandem
