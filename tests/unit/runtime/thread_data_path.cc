#include "thread_data_path.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "common/errors.h"
#include "runtime/request.h"

namespace tandem::runtime::testing {
namespace {

constexpr std::chrono::milliseconds kTimeout{60000};

template <typename T>
void reduce_into(T* acc, const T* in, size_t n, int op) {
  for (size_t i = 0; i < n; ++i) {
    switch (op) {
      case TANDEM_SUM:
      case TANDEM_AVERAGE: acc[i] = acc[i] + in[i]; break;
      case TANDEM_MIN: acc[i] = std::min(acc[i], in[i]); break;
      case TANDEM_MAX: acc[i] = std::max(acc[i], in[i]); break;
      case TANDEM_PRODUCT: acc[i] = acc[i] * in[i]; break;
    }
  }
}

template <typename T>
void scale(T* p, size_t n, double f) {
  if (f == 1.0) return;
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<T>(p[i] * f);
}

// Reduces all ranks' blobs in rank order into out (count elements).
void reduce_all(const std::vector<Bytes>& all, void* out, size_t count, int dtype, int op,
                double pre, double post, size_t offset_elems) {
  auto run = [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> acc(count), tmp(count);
    for (size_t r = 0; r < all.size(); ++r) {
      std::memcpy(r == 0 ? acc.data() : tmp.data(), all[r].data() + offset_elems * sizeof(T),
                  count * sizeof(T));
      if (r == 0) scale(acc.data(), count, pre);
      else {
        scale(tmp.data(), count, pre);
        reduce_into(acc.data(), tmp.data(), count, op);
      }
    }
    double f = post * (op == TANDEM_AVERAGE ? 1.0 / static_cast<double>(all.size()) : 1.0);
    scale(acc.data(), count, f);
    std::memcpy(out, acc.data(), count * sizeof(T));
  };
  switch (dtype) {
    case TANDEM_FLOAT32: run(float{}); break;
    case TANDEM_FLOAT64: run(double{}); break;
    case TANDEM_INT32: run(int32_t{}); break;
    case TANDEM_INT64: run(int64_t{}); break;
    case TANDEM_UINT8: run(uint8_t{}); break;
    case TANDEM_INT8: run(int8_t{}); break;
    default: throw UnsupportedError("test data path: dtype not supported");
  }
}

}  // namespace

std::shared_ptr<MemoryWorld> ThreadCluster::world_for(const std::vector<int>& ranks) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& w = worlds_[ranks];
  if (!w) w = std::make_shared<MemoryWorld>(static_cast<int>(ranks.size()));
  return w;
}

std::unique_ptr<DataPathFactory> ThreadCluster::factory(int rank) {
  class Factory : public DataPathFactory {
   public:
    Factory(ThreadCluster* c, int rank) : c_(c), rank_(rank) {}
    std::unique_ptr<DataPath> create(const std::vector<int>& ranks) override {
      auto it = std::find(ranks.begin(), ranks.end(), rank_);
      if (it == ranks.end()) return nullptr;
      return std::make_unique<ThreadDataPath>(c_->world_for(ranks),
                                              static_cast<int>(it - ranks.begin()));
    }

   private:
    ThreadCluster* c_;
    int rank_;
  };
  return std::make_unique<Factory>(this, rank);
}

ThreadDataPath::ThreadDataPath(std::shared_ptr<MemoryWorld> world, int rank)
    : boot_(world, rank), rank_(rank), size_(world->size()) {}

std::vector<Bytes> ThreadDataPath::exchange(const Bytes& mine) {
  return boot_.allgather(mine, kTimeout);
}

void* ThreadDataPath::fusion_buffer(size_t bytes) {
  if (fusion_.size() < bytes) fusion_.resize(bytes);
  return fusion_.data();
}

void ThreadDataPath::allreduce(void* buf, size_t count, tandem_dtype_t dtype, tandem_op_t op,
                               double prescale, double postscale) {
  ++allreduce_calls;
  size_t bytes = count * dtype_bytes(dtype);
  Bytes mine(static_cast<uint8_t*>(buf), static_cast<uint8_t*>(buf) + bytes);
  auto all = boot_.allgather(mine, kTimeout);
  reduce_all(all, buf, count, dtype, op, prescale, postscale, 0);
}

void ThreadDataPath::broadcast(void* buf, size_t bytes, int root) {
  Bytes mine;
  if (rank_ == root) mine.assign(static_cast<uint8_t*>(buf), static_cast<uint8_t*>(buf) + bytes);
  auto all = boot_.allgather(mine, kTimeout);
  if (bytes) std::memcpy(buf, all[root].data(), bytes);
}

void ThreadDataPath::allgatherv(const void* send, size_t send_bytes, void* recv,
                                const std::vector<size_t>& recv_bytes) {
  Bytes mine(static_cast<const uint8_t*>(send), static_cast<const uint8_t*>(send) + send_bytes);
  auto all = boot_.allgather(mine, kTimeout);
  size_t off = 0;
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].size() != recv_bytes[r]) throw MismatchError("test allgatherv: size mismatch");
    if (recv_bytes[r]) std::memcpy(static_cast<uint8_t*>(recv) + off, all[r].data(), recv_bytes[r]);
    off += recv_bytes[r];
  }
}

void ThreadDataPath::alltoallv(const void* send, const std::vector<size_t>& send_bytes, void* recv,
                               const std::vector<size_t>& recv_bytes) {
  size_t total = std::accumulate(send_bytes.begin(), send_bytes.end(), size_t{0});
  Bytes mine(static_cast<const uint8_t*>(send), static_cast<const uint8_t*>(send) + total);
  // Prefix the send counts so each rank can find its block in every blob.
  Bytes framed(send_bytes.size() * sizeof(size_t));
  std::memcpy(framed.data(), send_bytes.data(), framed.size());
  framed.insert(framed.end(), mine.begin(), mine.end());
  auto all = boot_.allgather(framed, kTimeout);
  size_t off = 0;
  for (size_t r = 0; r < all.size(); ++r) {
    std::vector<size_t> counts(static_cast<size_t>(size_));
    std::memcpy(counts.data(), all[r].data(), counts.size() * sizeof(size_t));
    size_t src = counts.size() * sizeof(size_t);
    for (int k = 0; k < rank_; ++k) src += counts[k];
    if (counts[rank_] != recv_bytes[r]) throw MismatchError("test alltoallv: size mismatch");
    if (recv_bytes[r])
      std::memcpy(static_cast<uint8_t*>(recv) + off, all[r].data() + src, recv_bytes[r]);
    off += recv_bytes[r];
  }
}

void ThreadDataPath::reducescatter(const void* send, void* recv,
                                   const std::vector<size_t>& recv_counts, tandem_dtype_t dtype,
                                   tandem_op_t op, double prescale, double postscale) {
  size_t total = std::accumulate(recv_counts.begin(), recv_counts.end(), size_t{0});
  size_t es = dtype_bytes(dtype);
  Bytes mine(static_cast<const uint8_t*>(send), static_cast<const uint8_t*>(send) + total * es);
  auto all = boot_.allgather(mine, kTimeout);
  size_t off = 0;
  for (int k = 0; k < rank_; ++k) off += recv_counts[k];
  reduce_all(all, recv, recv_counts[rank_], dtype, op, prescale, postscale, off);
}

}  // namespace tandem::runtime::testing
