// The runtime's DataPath over the engine's Communicator (layer 3), and the
// factory that makes one per process set.
//
// The runtime never shares a Communicator with the C API's direct
// collectives: those run on the caller's threads and the runtime's on its
// own, and a Communicator needs every rank to call it in the same order. So
// the factory builds the runtime its own world Communicator at init (over the
// job's bootstrap, with a job id of its own so the shm segments differ) and,
// for each process set, a Communicator over the set's ranks whose bootstrap
// rounds run over that world Communicator (bootstrap/subset_bootstrap.h):
// process sets are created collectively over the world on the runtime thread,
// so the ranks outside the set take part in those rounds and then go on.
//
// Fusion buffer: CPU allreduce needs no copy-in when its buffer lies in the
// node's shared segment (Communicator::allocate_shared), so the runtime's
// Communicators reserve an arena of at least TANDEM_FUSION_THRESHOLD bytes
// per rank (or TANDEM_SHM_ARENA_BYTES when larger; reserved address space,
// backed only as it is used). A buffer that still does not fit (or an
// arena that cannot be backed: /dev/shm full) falls back to the heap, where
// the reduction stages it through the segment instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "communicator/communicator.h"
#include "runtime/data_path.h"
#include "transport/round_relay.h"

namespace tandem::runtime {

class CommunicatorDataPath : public DataPath {
 public:
  // relay: carries round requests to the other nodes (the runtime's world
  // across nodes); without one, rounds wake members only on one node.
  explicit CommunicatorDataPath(std::unique_ptr<Communicator> comm,
                                std::unique_ptr<RoundRelay> relay = nullptr);
  ~CommunicatorDataPath() override;

  int rank() const override { return comm_->identity().rank; }
  int size() const override { return comm_->identity().size; }
  std::vector<Bytes> exchange(const Bytes& mine) override;
  uint64_t traffic_bytes() const override;
  bool can_wake_members() const override { return doorbell_ != nullptr; }
  bool wake_ups_may_be_lost() const override { return relay_ != nullptr; }
  void request_round(uint64_t round, bool far) override;
  void wake_self() override;
  bool wait_for_round(uint64_t done, std::chrono::steady_clock::time_point until,
                      const std::function<bool()>& ready) override;
  void* fusion_buffer(size_t bytes) override;
  void allreduce(void* buf, size_t count, tandem_dtype_t dtype, tandem_op_t op, double prescale,
                 double postscale) override;
  void allreduce_to(void* buf, size_t count, tandem_dtype_t dtype, tandem_op_t op, double prescale,
                    double postscale, const ResultSink& out,
                    const InputSource* source = nullptr) override;
  void adasum(void* buf, const std::vector<size_t>& counts, tandem_dtype_t dtype, double prescale,
              double postscale) override;
  void broadcast(void* buf, size_t bytes, int root) override;
  void allgatherv(const void* send, size_t send_bytes, void* recv,
                  const std::vector<size_t>& recv_bytes) override;
  void alltoallv(const void* send, const std::vector<size_t>& send_bytes, void* recv,
                 const std::vector<size_t>& recv_bytes) override;
  void reducescatter(const void* send, void* recv, const std::vector<size_t>& recv_counts,
                     tandem_dtype_t dtype, tandem_op_t op, double prescale,
                     double postscale) override;

  Communicator& communicator() { return *comm_; }
  // Whether the current fusion buffer lies in the shared segment (tests).
  bool fusion_buffer_is_shared() const { return shared_ != nullptr; }

 private:
  std::unique_ptr<Communicator> comm_;
  // After comm_: its thread uses comm_'s doorbell, so it goes first.
  std::unique_ptr<RoundRelay> relay_;
  Doorbell* doorbell_ = nullptr;  // comm_'s, when it reaches every member
  void* shared_ = nullptr;        // in comm_'s arena
  size_t shared_bytes_ = 0;
  size_t shared_fails_at_ = SIZE_MAX;  // smallest size the arena refused
  std::vector<uint64_t> heap_;         // 8-byte aligned fallback
  Bytes slots_;                        // exchange scratch
};

class CommunicatorDataPathFactory : public DataPathFactory {
 public:
  // job: the bootstrap of the job (the C API's Communicator's), used only by
  // the first create(), which must be for every rank and is made while
  // nothing else uses `job`. fusion_threshold_bytes sizes the arenas.
  // relay: makes the world's data path a RoundRelay when the job spans
  // nodes and wake_relay (TANDEM_WAKE_RELAY) is on; empty: none. Like
  // `connect`, the C API passes the TCP transport's (api/join.h).
  CommunicatorDataPathFactory(Bootstrap& job, TransportFactory connect, CommunicatorOptions options,
                              size_t fusion_threshold_bytes, bool wake_relay = false,
                              RoundRelayFactory relay = nullptr);
  std::unique_ptr<DataPath> create(const std::vector<int>& global_ranks) override;

 private:
  Bootstrap& job_;
  TransportFactory connect_;
  CommunicatorOptions options_;
  bool wake_relay_ = false;
  RoundRelayFactory relay_;
  CommunicatorDataPath* world_ = nullptr;  // owned by the runtime's global set
  int created_ = 0;
};

}  // namespace tandem::runtime
