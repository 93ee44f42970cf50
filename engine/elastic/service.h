// The elastic membership service: forms the numbered generations of an
// elastic job and serves each generation's bootstrap keys. It runs where no
// rank does, so that it outlives every one of them: in srun (the Slurm
// plugin starts it for --horovod=elastic) or in tandem-run --elastic. One
// background thread ("tandem-members") serves every connection (protocol.h).
//
// Generation 0 forms once the launch's ranks have all asked to join (or, past
// the join timeout, with those that did, if they are at least min_size).
// Generation g+1 forms when a member of g asks for it (it failed, or was
// interrupted to let new processes in) and every other member of g is
// accounted for: asked too, died (its connection closed before it said DONE),
// stopped answering the service's pings (SIGSTOP, a node cut off), or is
// done. A dead or silent member's node is excluded for the rest of the job,
// as Horovod blacklists a failed host: its other ranks are told they were
// removed, and a process that wakes up there later is refused. The rest probe
// each other (selection.h) and the connected part keeps the low ranks.
// A process of a later step (srun --overlap) that asks to join while a
// generation runs makes the service send UPDATE to that generation's
// members, which reach the script as HostsUpdatedInterrupt at its next
// commit; it joins with them in the next generation.
//
// Below min_size the joiners wait up to the elastic timeout for newcomers,
// then every one gets FAILED with Horovod's message; past the reset limit,
// FAILED with Horovod's reset-limit message.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "bootstrap/socket.h"

namespace tandem {
namespace elastic {

struct ServiceSettings {
  std::string token;                                  // every connection must present it first
  uint16_t port = 0;                                  // 0: an ephemeral port
  int min_size = 1;                                   // TANDEM_ELASTIC_MIN_NP
  int max_size = 1 << 24;                             // TANDEM_ELASTIC_MAX_NP
  int reset_limit = -1;                               // TANDEM_ELASTIC_RESET_LIMIT; -1: none
  std::chrono::milliseconds elastic_timeout{600000};  // HOROVOD_ELASTIC_TIMEOUT
  std::chrono::milliseconds ping_timeout{10000};      // TANDEM_ELASTIC_PING_TIMEOUT
  // The launch's ranks: generation 0 forms when this many have asked (0:
  // when join_timeout passes), or with those there at join_timeout.
  int expected = 0;
  std::chrono::milliseconds join_timeout{60000};  // TANDEM_BOOTSTRAP_TIMEOUT
  // A connection that has not sent its HELLO this long after connecting is
  // dropped, however many bytes of it trickled in (not a setting: tests
  // shorten it).
  std::chrono::milliseconds hello_timeout{10000};
  // Called once, from the service thread, with the local address the first
  // rank reached the service at (and the port): where later steps' ranks can
  // reach it too.
  std::function<void(const std::string& host, uint16_t port)> on_reached;
  // Called once, from the service thread, when the job is over (every
  // process of the last generation has exited and none waits to join) while
  // processes the service ejected or removed are still connected: a stopped
  // process never exits by itself and would hold the step (srun) forever.
  // The plugin ends the step.
  std::function<void(int stuck)> on_finished;
  // Messages for the user (one line each: a generation formed, a node
  // excluded, the job failed); default: stderr with a "tandem: " prefix.
  std::function<void(const std::string& line)> report;

  // min, max, reset limit and both timeouts from the environment (strict:
  // a malformed value is an InvalidArgument naming the variable).
  static ServiceSettings from_environment();
};

// What srun prints when it ends.
struct ServiceSummary {
  uint32_t generations = 0;  // formed
  int size = 0;              // of the last one
  int done = 0;              // processes that finished their work
  int lost = 0;              // died or stopped answering
  int removed = 0;           // told their node was excluded
  std::string failure;       // the message the job failed with, if any
};

class MembershipService {
 public:
  // Listens on every address (settings.port) and starts the thread. Throws
  // SystemError when the port cannot be bound.
  explicit MembershipService(ServiceSettings settings);
  ~MembershipService();
  MembershipService(const MembershipService&) = delete;
  MembershipService& operator=(const MembershipService&) = delete;

  uint16_t port() const { return port_; }
  ServiceSummary summary() const;

 private:
  struct Impl;
  void run();

  Fd listen_fd_;
  Fd wake_fd_;
  uint16_t port_ = 0;
  std::unique_ptr<Impl> impl_;
  mutable std::mutex summary_mu_;
  ServiceSummary summary_;
  std::thread thread_;
};

}  // namespace elastic
}  // namespace tandem
