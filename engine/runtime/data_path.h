// What the runtime needs from the layers below, for the ranks of one process
// set: a control-plane exchange for negotiation, memory the collectives can
// read in place (the fusion buffer), and the collectives on raw buffers.
// The runtime depends only on this interface; the engine adapts its
// Communicator to it (communicator_data_path.*), the unit tests adapt the
// in-memory bootstrap.
//
// Every call is collective over the set's members, in the same order on all
// of them, from the runtime's one background thread. Errors are thrown as
// tandem exceptions (PeerLostError, TimeoutError, AbortedError, ...); the
// runtime fails every pending handle with them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "common/reduce.h"
#include "common/errors.h"
#include "common/input_source.h"
#include "tandem/tandem.h"

namespace tandem::runtime {

class DataPath {
 public:
  virtual ~DataPath() = default;
  // This process's index in the set and the set's size.
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Every member contributes one blob and gets all of them, by set rank.
  virtual std::vector<Bytes> exchange(const Bytes& mine) = 0;

  // Bytes this member has sent and received across nodes so far (0 where
  // nothing crosses nodes): the runtime counts a negotiation round's share.
  virtual uint64_t traffic_bytes() const { return 0; }

  // Round wake-ups (optional). Where every member can wake the others (one
  // node: a futex in the shared segment; across nodes with the wake relay,
  // transport/tcp/wake_relay.h), an idle runtime sleeps until a
  // member asks for a round instead of running an empty round every
  // TANDEM_IDLE_WAIT so that members with work are not held up. Rounds are
  // counted from 1, the same on every member.
  virtual bool can_wake_members() const { return false; }
  // Whether a member's request can be lost on the way (the relay between
  // nodes is UDP): then a member that sleeps past its fallback time runs a
  // round anyway.
  virtual bool wake_ups_may_be_lost() const { return false; }
  // Asks every member for round `round`; members on other nodes only when
  // `far` (right after a busy round they poll anyway: runtime.cc kStayAwake).
  virtual void request_round(uint64_t round, bool far) { (void)round, (void)far; }
  // Wakes this member's wait_for_round; the only call made from other threads.
  virtual void wake_self() {}
  // Sleeps until a member asked for a round past `done` (true), `ready()`
  // holds or `until` passed (false). Only when can_wake_members().
  virtual bool wait_for_round(uint64_t done, std::chrono::steady_clock::time_point until,
                              const std::function<bool()>& ready) {
    (void)done, (void)until, (void)ready;
    return false;
  }

  // A buffer of at least `bytes` that the collectives below reduce without
  // staging copies (for CPU tensors: the node's shared segment). Valid until
  // the next call or destruction; the content need not survive a regrow.
  virtual void* fusion_buffer(size_t bytes) = 0;

  // In place on buf: buf = postscale * op(prescale * buf over members).
  virtual void allreduce(void* buf, size_t count, tandem_dtype_t dtype, tandem_op_t op,
                         double prescale, double postscale) = 0;
  // As allreduce, but the result goes to `out` in pieces (byte offset in the
  // result, the bytes, their length; every byte once, in increasing offset
  // order) and buf's content is undefined afterwards: the runtime unpacks a
  // fused buffer straight into the tensors. By default: allreduce, then all
  // of buf at once.
  // With a source (a pointer to the input at a byte offset and how many
  // bytes lie there in a row) buf need not hold the input: the data path
  // copies in only what peers read in place (by default: all of it).
  using ResultSink = std::function<void(size_t offset, const void* data, size_t bytes)>;
  using InputSource = tandem::InputSource;
  virtual void allreduce_to(void* buf, size_t count, tandem_dtype_t dtype, tandem_op_t op,
                            double prescale, double postscale, const ResultSink& out,
                            const InputSource* source = nullptr) {
    const size_t bytes = count * dtype_size(dtype);
    if (source) copy_from_source(*source, 0, buf, bytes);
    allreduce(buf, count, dtype, op, prescale, postscale);
    out(0, buf, bytes);
  }
  // Adasum in place on buf, which packs tensors of counts[k] elements
  // (communicator.h). Paths that cannot run it refuse with UnsupportedError;
  // request validation keeps GPU tensors from reaching them.
  virtual void adasum(void* buf, const std::vector<size_t>& counts, tandem_dtype_t dtype,
                      double prescale, double postscale) {
    (void)buf, (void)counts, (void)dtype, (void)prescale, (void)postscale;
    throw UnsupportedError(
        "allreduce with Adasum: this data path runs no Adasum; "
        "use CPU tensors");
  }
  // root is a set rank.
  virtual void broadcast(void* buf, size_t bytes, int root) = 0;
  // recv holds sum(recv_bytes), member r's block at offset sum(recv_bytes[0..r)).
  virtual void allgatherv(const void* send, size_t send_bytes, void* recv,
                          const std::vector<size_t>& recv_bytes) = 0;
  // send_bytes[r] go to member r, recv_bytes[r] come from it, packed in order.
  virtual void alltoallv(const void* send, const std::vector<size_t>& send_bytes, void* recv,
                         const std::vector<size_t>& recv_bytes) = 0;
  // Reduces sum(recv_counts) elements; member r gets block r (element counts).
  virtual void reducescatter(const void* send, void* recv, const std::vector<size_t>& recv_counts,
                             tandem_dtype_t dtype, tandem_op_t op, double prescale,
                             double postscale) = 0;
};

// Makes the data path of a process set. Called on every rank of the world
// with the same sorted global ranks, in the same order (collective); returns
// nullptr on ranks that are not members.
class DataPathFactory {
 public:
  virtual ~DataPathFactory() = default;
  virtual std::unique_ptr<DataPath> create(const std::vector<int>& global_ranks) = 0;
};

}  // namespace tandem::runtime
