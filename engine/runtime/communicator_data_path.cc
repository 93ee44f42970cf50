#include "runtime/communicator_data_path.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "bootstrap/subset_bootstrap.h"
#include "common/errors.h"
#include "shm/doorbell.h"

namespace tandem::runtime {

CommunicatorDataPath::CommunicatorDataPath(std::unique_ptr<Communicator> comm,
                                           std::unique_ptr<RoundRelay> relay)
    : comm_(std::move(comm)), relay_(std::move(relay)) {
  if (comm_->identity().cross_size == 1 || relay_) doorbell_ = &comm_->doorbell();
}

CommunicatorDataPath::~CommunicatorDataPath() {
  if (shared_) comm_->free_shared(shared_);
}

namespace {
// Bytes of a member's fixed slot in the exchange: a cycle's message with
// cache hits only (a few words of bits and flags) fits, so a round is one
// collective; a blob that does not fit (new requests in full) sends the rest
// in a second one.
constexpr size_t kSlotBytes = 1024;
constexpr size_t kSlotHeader = sizeof(uint64_t);
constexpr size_t kSlotPayload = kSlotBytes - kSlotHeader;
}  // namespace

std::vector<Bytes> CommunicatorDataPath::exchange(const Bytes& mine) {
  const size_t n = static_cast<size_t>(size());
  uint8_t slot[kSlotBytes] = {};
  const uint64_t my_size = mine.size();
  std::memcpy(slot, &my_size, kSlotHeader);
  std::memcpy(slot + kSlotHeader, mine.data(), std::min(mine.size(), kSlotPayload));
  slots_.resize(n * kSlotBytes);
  comm_->allgather(slot, kSlotBytes, slots_.data(), TANDEM_UINT8);
  std::vector<Bytes> out(n);
  std::vector<size_t> rest(n, 0);
  for (size_t r = 0; r < n; ++r) {
    const uint8_t* s = slots_.data() + r * kSlotBytes;
    uint64_t len = 0;
    std::memcpy(&len, s, kSlotHeader);
    if (len > (uint64_t{1} << 40))
      throw Error("runtime: member " + std::to_string(r) + " announced a cycle message of " +
                  std::to_string(len) + " bytes (a bug in Tandem)");
    out[r].assign(s + kSlotHeader, s + kSlotHeader + std::min<size_t>(len, kSlotPayload));
    rest[r] = len > kSlotPayload ? len - kSlotPayload : 0;
  }
  const size_t total = std::accumulate(rest.begin(), rest.end(), size_t{0});
  if (total == 0) return out;
  // Every member read the same lengths, so all of them make this call.
  Bytes packed(total);
  const uint8_t* my_rest = mine.size() > kSlotPayload ? mine.data() + kSlotPayload : nullptr;
  comm_->allgatherv(my_rest ? my_rest : packed.data(), rest[static_cast<size_t>(rank())],
                    packed.data(), rest, TANDEM_UINT8);
  size_t at = 0;
  for (size_t r = 0; r < n; ++r) {
    out[r].insert(out[r].end(), packed.begin() + static_cast<std::ptrdiff_t>(at),
                  packed.begin() + static_cast<std::ptrdiff_t>(at + rest[r]));
    at += rest[r];
  }
  return out;
}

uint64_t CommunicatorDataPath::traffic_bytes() const {
  const Transport::Traffic t = comm_->traffic();
  return t.bytes_sent + t.bytes_received;
}

void CommunicatorDataPath::request_round(uint64_t round, bool far) {
  // The node's first rank to ask for this round tells the other nodes.
  if (doorbell_ && doorbell_->request(round) && relay_ && far) relay_->forward(round);
}

void CommunicatorDataPath::wake_self() {
  if (doorbell_) doorbell_->poke();
}

bool CommunicatorDataPath::wait_for_round(uint64_t done,
                                          std::chrono::steady_clock::time_point until,
                                          const std::function<bool()>& ready) {
  return doorbell_ && doorbell_->wait(done, until, ready);
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
      } catch (const Error&) {}
    }
    shared_fails_at_ = bytes;
  }
  // Larger than the arena, or /dev/shm cannot back it: the heap works, with
  // one staging copy inside the reduction.
  if (heap_.size() * sizeof(uint64_t) < bytes)
    heap_.resize((bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t));
  return heap_.data();
}

void CommunicatorDataPath::allreduce(void* buf, size_t count, tandem_dtype_t dtype, tandem_op_t op,
                                     double prescale, double postscale) {
  comm_->allreduce(buf, buf, count, dtype, op, prescale, postscale);
}

void CommunicatorDataPath::allreduce_to(void* buf, size_t count, tandem_dtype_t dtype,
                                        tandem_op_t op, double prescale, double postscale,
                                        const ResultSink& out, const InputSource* source) {
  comm_->allreduce_to(buf, count, dtype, op, prescale, postscale, out, source);
}

void CommunicatorDataPath::adasum(void* buf, const std::vector<size_t>& counts,
                                  tandem_dtype_t dtype, double prescale, double postscale) {
  comm_->adasum(buf, counts, dtype, prescale, postscale);
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
                                                         size_t fusion_threshold_bytes,
                                                         bool wake_relay, RoundRelayFactory relay)
    : job_(job),
      connect_(std::move(connect)),
      options_(options),
      wake_relay_(wake_relay),
      relay_(std::move(relay)) {
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
  std::unique_ptr<RoundRelay> relay;
  if (!world_ && job.cross_size > 1 && relay_) {
    // Collective like everything here: every rank of the world takes part,
    // and there is a relay only if every rank's TANDEM_WAKE_RELAY says so.
    Doorbell& bell = comm->doorbell();
    relay = relay_(
        job_, [&bell](uint64_t round) { bell.relay(round); }, wake_relay_, options_.timeout);
  }
  auto dp = std::make_unique<CommunicatorDataPath>(std::move(comm), std::move(relay));
  if (!world_) world_ = dp.get();
  return dp;
}

}  // namespace tandem::runtime
