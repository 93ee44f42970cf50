#include "communicator/node_bootstrap.h"

#include <cstring>

namespace tandem {
namespace {

class NodeBootstrap : public Bootstrap {
 public:
  NodeBootstrap(const Identity& id, ShmGroup& shm) : id_(id), shm_(shm) {}

  const Identity& identity() const override { return id_; }

  // Two rounds: every blob's length, then the blobs packed in rank order.
  // The ShmGroup's own timeout bounds each (its waits end on a lost peer).
  std::vector<Bytes> allgather(const Bytes& mine, std::chrono::milliseconds) override {
    const int n = shm_.local_size();
    uint64_t length = mine.size();
    std::vector<uint64_t> lengths(static_cast<size_t>(n));
    shm_.allgatherv(&length, lengths.data(), std::vector<size_t>(n, sizeof(uint64_t)));
    std::vector<size_t> bytes(lengths.begin(), lengths.end());
    size_t total = 0;
    for (size_t b : bytes) total += b;
    Bytes packed(total);
    shm_.allgatherv(mine.data(), packed.data(), bytes);
    std::vector<Bytes> out(static_cast<size_t>(n));
    size_t at = 0;
    for (int r = 0; r < n; ++r) {
      out[r].assign(packed.begin() + at, packed.begin() + at + bytes[r]);
      at += bytes[r];
    }
    return out;
  }

 private:
  Identity id_;
  ShmGroup& shm_;
};

}  // namespace

std::unique_ptr<Bootstrap> make_node_bootstrap(const Identity& id, ShmGroup& shm) {
  return std::make_unique<NodeBootstrap>(id, shm);
}

}  // namespace tandem
