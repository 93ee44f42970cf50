// Ranks as forked processes, for the tests that kill or stop a rank. The
// bootstrap is an allgather over an anonymous shared mapping made before
// fork(): enough for shared memory (which is all one node needs) and
// independent of the TCP store and PMIx.
#pragma once

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "common/errors.h"

namespace tandem {
namespace testing {

constexpr int kForkMaxRanks = 8;

// Lives in MAP_SHARED memory; zero-initialised by mmap.
struct ForkArea {
  std::atomic<uint64_t> round[kForkMaxRanks];
  uint32_t len[kForkMaxRanks][2];
  char blob[kForkMaxRanks][2][1024];
  // What each rank reports back to the test.
  std::atomic<int> ready[kForkMaxRanks];
  std::atomic<int> outcome[kForkMaxRanks];  // 0 none, 1 PeerLost, 2 Timeout, 3 other, 4 ok
  char message[kForkMaxRanks][512];
};

inline ForkArea* make_fork_area() {
  void* p =
      mmap(nullptr, sizeof(ForkArea), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw SystemError("mmap fork area", errno);
  return static_cast<ForkArea*>(p);
}

class ForkBootstrap : public Bootstrap {
 public:
  ForkBootstrap(ForkArea* area, int rank, int size, const std::string& job_id) : area_(area) {
    id_.rank = rank;
    id_.size = size;
    id_.local_rank = rank;
    id_.local_size = size;
    id_.node_of_rank.assign(size, 0);
    id_.job_id = job_id;
  }
  const Identity& identity() const override { return id_; }
  std::vector<Bytes> allgather(const Bytes& mine, std::chrono::milliseconds timeout) override {
    const uint64_t r = ++round_;
    const int b = static_cast<int>(r & 1), me = id_.rank;
    if (mine.size() > sizeof area_->blob[0][0])
      throw InvalidArgument("fork bootstrap: blob too large");
    if (!mine.empty()) std::memcpy(area_->blob[me][b], mine.data(), mine.size());
    area_->len[me][b] = static_cast<uint32_t>(mine.size());
    area_->round[me].store(r);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (int j = 0; j < id_.size; ++j) {
      while (area_->round[j].load() < r) {
        if (std::chrono::steady_clock::now() > deadline)
          throw TimeoutError("fork bootstrap: rank " + std::to_string(j) + " did not arrive");
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
    std::vector<Bytes> out(id_.size);
    for (int j = 0; j < id_.size; ++j)
      out[j].assign(area_->blob[j][b], area_->blob[j][b] + area_->len[j][b]);
    return out;
  }

 private:
  ForkArea* area_;
  Identity id_;
  uint64_t round_ = 0;
};

}  // namespace testing
}  // namespace tandem
