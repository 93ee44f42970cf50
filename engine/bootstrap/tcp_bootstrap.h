// The bootstrap over the TCP rendezvous store: for tandem-run and for any
// launcher that can set TANDEM_RENDEZVOUS_ADDR/TOKEN, TANDEM_RANK and
// TANDEM_SIZE (see docs/bootstrap.md). Node membership is learned by
// exchanging node names (hostnames by default) through the store.
//
// Keys are never reused: operation n of session s (the how-many-th time
// this rank joined the store, store_protocol.h) writes "s<s>/ag/<n>/<rank>"
// (or "s<s>/bc/<n>" for a broadcast), and every rank runs the same sequence
// of operations. A rank deletes its own keys of earlier operations once an
// allgather completes, because then every rank has posted that allgather's
// key and so has finished reading everything before it: the store stays small
// however long the job runs.
#pragma once

#include <memory>
#include <string>

#include "bootstrap/bootstrap.h"
#include "bootstrap/socket.h"

namespace tandem {

class TcpStoreServer;
class TcpStoreClient;

// Not thread-safe: one thread at a time calls a given bootstrap, as every
// rank must issue the same sequence of operations anyway.
class TcpBootstrap : public Bootstrap {
 public:
  struct Options {
    HostPort addr;
    std::string token;
    int rank = 0;
    int size = 1;
    std::string node_name;                     // ranks with the same name share a node...
    std::string node_domain;                   // ...when they also share this (node_domain.h)
    std::string job_id;                        // empty: rank 0 draws a random one
    bool host_store = false;                   // this rank (rank 0) runs the store at addr.port
    std::chrono::milliseconds timeout{60000};  // joining and the identity exchange
  };

  // Joins: connects to the store (hosting it first if asked), then exchanges
  // node names and the job id. Throws BootstrapError/TimeoutError/PeerLostError
  // naming the store or the ranks at fault.
  explicit TcpBootstrap(Options options);
  // Leaves the store; a hosting rank 0 waits (up to the join timeout) for the
  // other ranks of its session to leave. The store it hosts keeps serving
  // until the process exits, so that the job can join again.
  ~TcpBootstrap() override;

  const Identity& identity() const override { return identity_; }
  std::vector<Bytes> allgather(const Bytes& mine, std::chrono::milliseconds timeout) override;
  Bytes broadcast(const Bytes& value, int root, std::chrono::milliseconds timeout) override;

 private:
  std::string missing_ranks(const std::string& prefix);

  Options options_;
  std::shared_ptr<TcpStoreServer> server_;
  std::unique_ptr<TcpStoreClient> client_;
  Identity identity_;
  uint32_t session_ = 0;
  std::string prefix_;  // "s<session>/"
  uint64_t next_op_ = 0;
  std::vector<std::string> own_keys_;  // this rank's keys not yet known to be read by all
};

}  // namespace tandem
