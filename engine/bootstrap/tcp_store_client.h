// A rank's connection to the rendezvous store (see store_protocol.h). One
// request at a time; every call ends at its deadline.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/socket.h"
#include "bootstrap/store_protocol.h"

namespace tandem {

class TcpStoreClient {
 public:
  // Connects (retrying until the deadline: the store may start after us) and
  // presents the job token. Throws BootstrapError when the store cannot be
  // reached or refuses us (wrong token, duplicate rank, size mismatch).
  TcpStoreClient(const HostPort& addr, const std::string& token, int rank, int size,
                 Deadline deadline);
  // Says BYE, so that the store does not count this rank as lost.
  ~TcpStoreClient();
  TcpStoreClient(const TcpStoreClient&) = delete;
  TcpStoreClient& operator=(const TcpStoreClient&) = delete;

  void set(const std::string& key, const Bytes& value, Deadline deadline);
  // The value, or nullopt when the key is not set by the deadline (a past
  // deadline just looks). Throws PeerLostError naming the rank when the store
  // has seen a rank drop out, BootstrapError when the store itself is gone.
  std::optional<Bytes> get(const std::string& key, Deadline deadline);
  // The values of prefix+"0" ... prefix+"<count-1>" in one request, once all
  // are set; nullopt when one is still missing at the deadline. Throws like
  // get().
  std::optional<std::vector<Bytes>> gather(const std::string& prefix, int count, Deadline deadline);
  // Forgets a key (no reply awaited).
  void del(const std::string& key);

  const HostPort& address() const { return addr_; }
  // How many times this rank joined the store before this connection (the
  // job's session number, store_protocol.h).
  uint32_t session() const { return session_; }

 private:
  void send_frame(const Bytes& frame, Deadline deadline);
  // Reads one reply frame; the store gets grace beyond the deadline so that
  // its own MISSING answer arrives before we give up on the store.
  Bytes recv_frame(Deadline deadline);
  // A waiting request (GET, GATHER): sends it and reads the answer into
  // `reply`. True when the answer is `found` (reply[0]; its fields follow),
  // false when MISSING; LOST throws PeerLostError naming the rank, anything
  // else loses the store (`what` names the request).
  bool ask(store::Writer& request, store::Reply found, const char* what, Deadline deadline,
           Bytes* reply);
  [[noreturn]] void store_lost(const std::string& why);

  HostPort addr_;
  std::string name_;  // "rendezvous store at host:port"
  Fd fd_;
  uint32_t session_ = 0;
};

}  // namespace tandem
