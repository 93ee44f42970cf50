#include "runtime/communicator_data_path.h"

#include <algorithm>
#include <numeric>

#include "bootstrap/subset_bootstrap.h"
#include "common/errors.h"

namespace tandem::runtime {

CommunicatorDataPath::CommunicatorDataPath(std::unique_ptr<Communicator> comm)
    : comm_(std::move(comm)) {}

CommunicatorDataPath::~CommunicatorDataPath() {
  if (shared_) comm_->free_shared(shared_);
}

// Two collectives: the sizes, then the blobs packed in rank order.
std::vector<Bytes> CommunicatorDataPath::exchange(const Bytes& mine) {
  const int n = size();
  int64_t my_size = static_cast<int64_t>(mine.size());
  std::vector<int64_t> sizes(static_cast<size_t>(n));
  comm_->allgather(&my_size, 1, sizes.data(), TANDEM_INT64);
  sizes_.assign(sizes.begin(), sizes.end());
  Bytes packed(std::accumulate(sizes_.begin(), sizes_.end(), size_t{0}));
  comm_->allgatherv(mine.data(), mine.size(), packed.data(), sizes_, TANDEM_UINT8);
  std::vector<Bytes> out(static_cast<size_t>(n));
  size_t at = 0;
  for (int r = 0; r < n; ++r) {
    out[r].assign(packed.begin() + static_cast<std::ptrdiff_t>(at),
                  packed.begin() + static_cast<std::ptrdiff_t>(at + sizes_[r]));
    at += sizes_[r];
  }
  return out;
}

void* CommunicatorDataPath::fusion_buffer(size_t bytes) {
  if (shared_ && shared_bytes_ >= bytes) return shared_;
  if (bytes < shared_fails_at_) {
    const size_t had = shared_bytes_;
    if (shared_) comm_->free_shared(shared_);
    shared_ = nullptr;
    shared_bytes_ = 0;
    // Grow by half again when it fits, so that a slowly rising size does not
    // reallocate every cycle; else exactly.
    for (size_t want : {std::max(bytes, had + had / 2), bytes}) {
      try {
        shared_ = comm_->allocate_shared(want);
        shared_bytes_ = want;
        heap_.clear();
        heap_.shrink_to_fit();
        return shared_;
      } catch (const Error&) {
      }
    }
    shared_fails_at_ = bytes;
  }
  // Larger than the arena, or /dev/shm cannot back it: the heap works, with
  // one staging copy inside the reduction.
  if (heap_.size() * sizeof(uint64_t) < bytes)
    heap_.resize((bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t));
  return heap_.data();
}

void CommunicatorDataPath::allreduce(void* buf, size_t count, tandem_dtype_t dtype,
                                     tandem_op_t op, double prescale, double postscale) {
  comm_->allreduce(buf, buf, count, dtype, op, prescale, postscale);
}

void CommunicatorDataPath::broadcast(void* buf, size_t bytes, int root) {
  comm_->broadcast(buf, bytes, TANDEM_UINT8, root);
}

void CommunicatorDataPath::allgatherv(const void* send, size_t send_bytes, void* recv,
                                      const std::vector<size_t>& recv_bytes) {
  comm_->allgatherv(send, send_bytes, recv, recv_bytes, TANDEM_UINT8);
}

void CommunicatorDataPath::alltoallv(const void* send, const std::vector<size_t>& send_bytes,
                                     void* recv, const std::vector<size_t>& recv_bytes) {
  comm_->alltoallv(send, send_bytes, recv, recv_bytes, TANDEM_UINT8);
}

void CommunicatorDataPath::reducescatter(const void* send, void* recv,
                                         const std::vector<size_t>& recv_counts,
                                         tandem_dtype_t dtype, tandem_op_t op, double prescale,
                                         double postscale) {
  comm_->reducescatter(send, recv, recv_counts, dtype, op, prescale, postscale);
}

CommunicatorDataPathFactory::CommunicatorDataPathFactory(Bootstrap& job, TransportFactory connect,
                                                         CommunicatorOptions options,
                                                         size_t fusion_threshold_bytes)
    : job_(job), connect_(std::move(connect)), options_(options) {
  constexpr size_t kPage = 4096;
  const size_t fusion = (fusion_threshold_bytes + kPage - 1) / kPage * kPage;
  options_.shm_arena_bytes = std::max(options_.shm_arena_bytes, fusion);
  options_.connect_world_at_start = true;
}

std::unique_ptr<DataPath> CommunicatorDataPathFactory::create(
    const std::vector<int>& global_ranks) {
  const Identity& job = job_.identity();
  const int index = created_++;
  SubsetBootstrap::ParentAllgather parent;
  if (!world_) {
    if (static_cast<int>(global_ranks.size()) != job.size)
      throw Error("runtime: the first data path must be the world's (a bug in Tandem)");
    parent = [this](const Bytes& b, std::chrono::milliseconds t) { return job_.allgather(b, t); };
  } else {
    // Later sets bootstrap over the runtime's world Communicator; its own
    // deadline (TANDEM_TIMEOUT) bounds every round.
    parent = [this](const Bytes& b, std::chrono::milliseconds) { return world_->exchange(b); };
  }
  const bool member =
      std::find(global_ranks.begin(), global_ranks.end(), job.rank) != global_ranks.end();
  if (!member) {
    SubsetBootstrap::take_part_as_outsider(parent, options_.timeout);
    return nullptr;
  }
  // ".rt" for the runtime's world, ".ps<n>" for the n-th process set: every
  // rank creates them in the same order, so the names agree.
  const std::string job_id =
      job.job_id + (index == 0 ? std::string(".rt") : ".ps" + std::to_string(index));
  auto boot = std::make_unique<SubsetBootstrap>(job, global_ranks, job_id, parent);
  SubsetBootstrap* view = boot.get();
  auto comm = std::make_unique<Communicator>(std::move(boot), connect_, options_);
  view->finish(options_.timeout);
  auto dp = std::make_unique<CommunicatorDataPath>(std::move(comm));
  if (!world_) world_ = dp.get();
  return dp;
}

}  // namespace tandem::runtime
