// Test support: a DataPath for ranks as threads, built on the in-memory
// bootstrap. Every collective is an allgather of blobs followed by local
// arithmetic, which is slow but obviously right: the runtime tests check the
// runtime, not the data path's algorithms. Each process set gets its own
// MemoryWorld, shared by its members through a ThreadCluster.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "bootstrap/memory_bootstrap.h"
#include "runtime/data_path.h"

namespace tandem::runtime::testing {

class ThreadCluster {
 public:
  explicit ThreadCluster(int size) : size_(size) {}
  int size() const { return size_; }
  std::shared_ptr<MemoryWorld> world_for(const std::vector<int>& ranks);
  // Makes rank `rank`'s factory.
  std::unique_ptr<DataPathFactory> factory(int rank);

 private:
  int size_;
  std::mutex mu_;
  std::map<std::vector<int>, std::shared_ptr<MemoryWorld>> worlds_;
};

class ThreadDataPath : public DataPath {
 public:
  ThreadDataPath(std::shared_ptr<MemoryWorld> world, int rank);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<Bytes> exchange(const Bytes& mine) override;
  void* fusion_buffer(size_t bytes) override;
  void allreduce(void* buf, size_t count, tandem_dtype_t dtype, tandem_op_t op, double prescale,
                 double postscale) override;
  void broadcast(void* buf, size_t bytes, int root) override;
  void allgatherv(const void* send, size_t send_bytes, void* recv,
                  const std::vector<size_t>& recv_bytes) override;
  void alltoallv(const void* send, const std::vector<size_t>& send_bytes, void* recv,
                 const std::vector<size_t>& recv_bytes) override;
  void reducescatter(const void* send, void* recv, const std::vector<size_t>& recv_counts,
                     tandem_dtype_t dtype, tandem_op_t op, double prescale,
                     double postscale) override;

  size_t allreduce_calls = 0;

 private:
  MemoryBootstrap boot_;
  int rank_, size_;
  std::vector<uint8_t> fusion_;
};

}  // namespace tandem::runtime::testing
