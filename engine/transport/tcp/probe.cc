#include "transport/tcp/probe.h"

#include <cerrno>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/errors.h"
#include "transport/tcp/interface.h"
#include "transport/tcp/wire.h"

namespace tandem {
namespace tcp {

ProbeListener::ProbeListener() {
  std::string why;
  SockAddr addr = choose_listen_address(false, why);
  listener_ = listen_on(addr);
  endpoint_ = encode_endpoint(addr);
  wake_ = Fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_.valid()) throw SystemError("eventfd for the probe listener", errno);
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "tandem-probe");
    for (;;) {
      pollfd p[2] = {{wake_.get(), POLLIN, 0}, {listener_.get(), POLLIN, 0}};
      if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
      if (p[0].revents) return;
      SockAddr peer;
      while (accept_from(listener_.get(), peer).valid()) {
        // Accepted and closed: the handshake was the probe.
      }
    }
  });
}

ProbeListener::~ProbeListener() {
  uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
}

std::vector<size_t> unreachable(const std::vector<Bytes>& endpoints,
                                std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<size_t> bad;
  std::vector<Fd> fds(endpoints.size());
  std::vector<bool> open(endpoints.size(), false);
  for (size_t i = 0; i < endpoints.size(); ++i) {
    auto addr = decode_endpoint(endpoints[i]);
    if (!addr) {
      bad.push_back(i);
      continue;
    }
    try {
      fds[i] = start_connect(*addr);
      open[i] = true;
    } catch (const SystemError&) {
      bad.push_back(i);  // refused at once (no route, blackhole)
    }
  }
  for (;;) {
    std::vector<pollfd> p;
    std::vector<size_t> idx;
    for (size_t i = 0; i < fds.size(); ++i)
      if (open[i]) {
        p.push_back({fds[i].get(), POLLOUT, 0});
        idx.push_back(i);
      }
    if (p.empty()) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      for (size_t i : idx) bad.push_back(i);
      break;
    }
    if (::poll(p.data(), p.size(), static_cast<int>(left.count())) < 0 && errno != EINTR)
      throw SystemError("probe poll", errno);
    for (size_t k = 0; k < p.size(); ++k) {
      if (!p[k].revents) continue;
      open[idx[k]] = false;
      if (pending_error(p[k].fd) != 0) bad.push_back(idx[k]);
    }
  }
  return bad;
}

}  // namespace tcp
}  // namespace tandem
