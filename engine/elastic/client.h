// A rank's connection to the elastic membership service (service.h,
// protocol.h), one per process, made on first use and kept until the process
// exits: the service counts a process whose connection closes before it said
// DONE as failed. A reader thread ("tandem-elastic") answers the service's
// pings at once, whatever the rest of the process is doing (in a collective,
// in Python, in a long computation), so that only a stopped or unreachable
// process is ejected; it also queues host updates for the framework layer
// (tandem_elastic_wait_update). Requests go one at a time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/socket.h"

namespace tandem {
namespace elastic {

struct Assignment {
  uint32_t generation = 0;
  int rank = 0;
  int size = 0;
  std::string job_id;
  std::vector<std::string> nodes;  // node name of every rank
};

// One probe target of a CANDIDATES round.
struct ProbeTarget {
  uint32_t member = 0;
  Bytes endpoint;  // tcp::encode_endpoint form
};

// The service's answer to JOIN (after any probe rounds).
struct JoinAnswer {
  enum Kind { kAssigned, kRemoved, kFailed } kind = kFailed;
  Assignment assignment;
  std::string message;  // kRemoved, kFailed
};

class ElasticClient {
 public:
  // TANDEM_ELASTIC_ADDR is set: this process was started by an elastic launch.
  static bool requested();
  // The process's connection, made on first call from TANDEM_ELASTIC_ADDR,
  // TANDEM_ELASTIC_TOKEN, TANDEM_NODE_NAME and TANDEM_ELASTIC_LABEL. Throws
  // BootstrapError when the service cannot be reached or refuses us.
  static ElasticClient& instance();
  // The connection if instance() made it already, else null (never connects).
  static ElasticClient* existing();

  uint32_t member() const { return member_; }
  std::chrono::milliseconds elastic_timeout() const { return elastic_timeout_; }
  std::chrono::milliseconds ping_timeout() const { return ping_timeout_; }
  // The generation this process was last assigned to (kNoGeneration: none).
  uint32_t last_generation() const { return last_generation_; }

  // JOIN, then probe rounds through `probe` (given the round's targets, it
  // returns the members it could not reach), until the service decides.
  using Prober = std::vector<uint32_t> (*)(const std::vector<ProbeTarget>& targets,
                                           std::chrono::milliseconds timeout, void* ctx);
  JoinAnswer join(const Bytes& probe_endpoint, Prober probe, void* ctx);

  // The store requests of a generation's bootstrap (store_protocol.h).
  void set(const std::string& key, const Bytes& value, Deadline deadline);
  // nullopt at the deadline; PeerLostError naming the rank when a member of
  // the key's generation has left it.
  std::optional<Bytes> get(const std::string& key, Deadline deadline);
  void del(const std::string& key);

  // The process finished its work: its exit is not a failure.
  void done();
  // The next host update (timestamp, HostUpdate kind), or false at the
  // deadline. Updates queue until taken.
  bool wait_update(Deadline deadline, uint64_t* timestamp, uint32_t* kind);

 private:
  ElasticClient(const HostPort& addr, const std::string& token, const std::string& node,
                const std::string& label);
  void reader();
  void send(const Bytes& frame);
  Bytes await(Deadline deadline, const char* what);
  [[noreturn]] void gone(const std::string& why);

  HostPort addr_;
  std::string name_;
  Fd fd_;
  uint32_t member_ = 0;
  std::chrono::milliseconds elastic_timeout_{600000};
  std::chrono::milliseconds ping_timeout_{10000};
  uint32_t last_generation_;

  std::mutex request_mu_;  // one request at a time
  std::mutex send_mu_;     // frames from the caller and PONGs from the reader
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Bytes> replies_;
  std::deque<std::pair<uint64_t, uint32_t>> updates_;
  bool broken_ = false;
  std::string broken_why_;
  std::thread reader_;
};

}  // namespace elastic
}  // namespace tandem
