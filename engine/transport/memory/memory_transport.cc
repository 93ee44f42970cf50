#include "transport/memory/memory_transport.h"

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>

#include "common/errors.h"

namespace tandem {

// Mailboxes keyed by (connection, from, to). Every rank calls connect in the
// same order (it is collective), so the k-th connect of each rank belongs to
// the same connection k.
class MemoryNetwork {
 public:
  uint64_t next_connection(int world_rank) {
    std::lock_guard<std::mutex> lock(mu_);
    return next_[world_rank]++;
  }
  void post(uint64_t conn, int from, int to, const void* data, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      const auto* p = static_cast<const uint8_t*>(data);
      boxes_[{conn, from, to}].emplace_back(p, p + bytes);
    }
    cv_.notify_all();
  }
  // Returns false on timeout; throws what `aborted` says when set.
  bool take(uint64_t conn, int from, int to, void* data, size_t bytes,
            std::chrono::milliseconds timeout, const std::atomic<bool>* aborted,
            const std::string* why) {
    std::unique_lock<std::mutex> lock(mu_);
    auto& box = boxes_[{conn, from, to}];
    if (!cv_.wait_for(lock, timeout, [&] { return !box.empty() || *aborted; })) return false;
    if (*aborted) throw AbortedError(*why);
    Bytes m = std::move(box.front());
    box.pop_front();
    if (m.size() != bytes)
      throw MismatchError("memory transport: expected a message of " + std::to_string(bytes) +
                          " bytes from rank " + std::to_string(from) + ", got " +
                          std::to_string(m.size()));
    if (bytes) std::memcpy(data, m.data(), bytes);
    return true;
  }
  void abort_all() { cv_.notify_all(); }
  std::mutex& mutex() { return mu_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int, uint64_t> next_;
  std::map<std::tuple<uint64_t, int, int>, std::deque<Bytes>> boxes_;
};

namespace {

class MemoryTransport : public Transport {
 public:
  MemoryTransport(std::shared_ptr<MemoryNetwork> net, uint64_t conn, std::vector<int> members,
                  int rank, std::chrono::milliseconds timeout)
      : net_(std::move(net)),
        conn_(conn),
        members_(std::move(members)),
        rank_(rank),
        timeout_(timeout) {}

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }

  void send(int peer, const void* data, size_t bytes) override {
    check(peer);
    net_->post(conn_, members_[rank_], members_[peer], data, bytes);
  }
  void recv(int peer, void* data, size_t bytes) override {
    check(peer);
    if (!net_->take(conn_, members_[peer], members_[rank_], data, bytes, timeout_, &aborted_,
                    &why_))
      throw TimeoutError("memory transport: rank " + std::to_string(members_[peer]) +
                         " sent nothing within " + std::to_string(timeout_.count()) + " ms");
  }
  void sendrecv(int to, const void* send_data, size_t send_bytes, int from, void* recv_data,
                size_t recv_bytes) override {
    send(to, send_data, send_bytes);  // posting never blocks
    recv(from, recv_data, recv_bytes);
  }
  void abort(const std::string& why) override {
    {
      std::lock_guard<std::mutex> lock(net_->mutex());
      why_ = why;
      aborted_ = true;
    }
    net_->abort_all();
  }

 private:
  void check(int peer) const {
    if (peer < 0 || peer >= size() || peer == rank_)
      throw InvalidArgument("memory transport: bad peer " + std::to_string(peer));
    if (aborted_) throw AbortedError(why_);
  }
  std::shared_ptr<MemoryNetwork> net_;
  uint64_t conn_;
  std::vector<int> members_;
  int rank_;
  std::chrono::milliseconds timeout_;
  std::atomic<bool> aborted_{false};
  std::string why_;
};

}  // namespace

std::shared_ptr<MemoryNetwork> make_memory_network() { return std::make_shared<MemoryNetwork>(); }

std::unique_ptr<Transport> connect_memory(const std::shared_ptr<MemoryNetwork>& network,
                                          Bootstrap& bootstrap, const std::vector<int>& members,
                                          std::chrono::milliseconds timeout) {
  const int me = bootstrap.identity().rank;
  int index = -1;
  for (size_t i = 0; i < members.size(); ++i) {
    // Held to connect_tcp's rule, so that what passes here passes over TCP.
    if (i > 0 && members[i] <= members[i - 1])
      throw InvalidArgument("connect_memory on world rank " + std::to_string(me) +
                            ": members must be ascending and distinct, got " +
                            std::to_string(members[i - 1]) + " before " +
                            std::to_string(members[i]));
    if (members[i] == me) index = static_cast<int>(i);
  }
  if (index < 0)
    throw InvalidArgument("connect_memory: rank " + std::to_string(me) + " is not in its group");
  const uint64_t conn = network->next_connection(me);
  return std::make_unique<MemoryTransport>(network, conn, members, index, timeout);
}

}  // namespace tandem
