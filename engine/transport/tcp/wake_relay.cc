#include "transport/tcp/wake_relay.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/errors.h"
#include "transport/tcp/interface.h"

namespace tandem {
namespace tcp {
namespace {

// key, round, origin node
constexpr size_t kDatagramBytes = sizeof(WakeRelay::Key) + sizeof(uint64_t) + sizeof(uint32_t);

Fd udp_socket(int family, const std::string& what) {
  Fd fd(::socket(family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) throw SystemError("wake relay: socket() " + what, errno);
  return fd;
}

// A rank's blob: whether it wants a relay; a leader's then its key and its
// address (length and bytes).
Bytes encode(bool wanted, const WakeRelay::Key& key, const SockAddr& addr) {
  Bytes b{static_cast<uint8_t>(wanted ? 1 : 0)};
  b.insert(b.end(), key.begin(), key.end());
  const uint32_t len = addr.len;
  const auto* l = reinterpret_cast<const uint8_t*>(&len);
  b.insert(b.end(), l, l + sizeof len);
  const auto* a = reinterpret_cast<const uint8_t*>(&addr.storage);
  b.insert(b.end(), a, a + addr.len);
  return b;
}

bool decode(const Bytes& blob, WakeRelay::Key* key, SockAddr* addr) {
  uint32_t len = 0;
  if (blob.empty()) return false;
  const uint8_t* b = blob.data() + 1;
  const size_t size = blob.size() - 1;
  if (size < key->size() + sizeof len) return false;
  std::memcpy(key->data(), b, key->size());
  std::memcpy(&len, b + key->size(), sizeof len);
  if (len > sizeof addr->storage || size != key->size() + sizeof len + len) return false;
  std::memcpy(&addr->storage, b + key->size() + sizeof len, len);
  addr->len = len;
  return true;
}

}  // namespace

std::unique_ptr<WakeRelay> WakeRelay::create(Bootstrap& world, RingLocal ring, bool wanted,
                                             SockAddr listen, std::chrono::milliseconds timeout) {
  const Identity& id = world.identity();
  const bool leader = id.local_rank == 0;
  std::unique_ptr<WakeRelay> relay(new WakeRelay(std::move(ring)));
  Bytes mine{static_cast<uint8_t>(wanted ? 1 : 0)};
  if (leader && wanted) {
    WakeRelay& w = *relay;
    if (getrandom(w.key_.data(), w.key_.size(), 0) != static_cast<ssize_t>(w.key_.size()))
      throw SystemError("wake relay: getrandom", errno);
    w.listener_ = udp_socket(listen.family(), "to listen on " + to_string(listen));
    if (::bind(w.listener_.get(), listen.get(), listen.len) != 0)
      throw SystemError("wake relay: bind " + to_string(listen), errno);
    listen.len = sizeof listen.storage;
    if (::getsockname(w.listener_.get(), listen.get(), &listen.len) != 0)
      throw SystemError("wake relay: getsockname", errno);
    w.stop_ = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!w.stop_.valid()) throw SystemError("wake relay: eventfd", errno);
    mine = encode(true, w.key_, listen);
    w.address_ = listen;
  }
  const std::vector<Bytes> all = world.allgather(mine, timeout);
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r].empty() || all[r][0] != 1) return nullptr;  // every rank decides the same
  relay->node_ = static_cast<uint32_t>(std::max(0, id.cross_rank));
  relay->peers_.resize(static_cast<size_t>(std::max(1, id.cross_size)));
  int family = -1;
  for (size_t r = 0; r < all.size(); ++r) {
    const int node = id.node_of_rank.empty() ? 0 : id.node_of_rank.at(r);
    if (all[r].size() == 1 || node == id.cross_rank) continue;  // not a leader, or this node's
    Peer& p = relay->peers_.at(static_cast<size_t>(node));
    if (!decode(all[r], &p.key, &p.addr))
      throw Error("wake relay: rank " + std::to_string(r) + " published a malformed address");
    family = p.addr.family();
  }
  if (family >= 0) relay->sender_ = udp_socket(family, "to send wake-ups");
  if (leader) relay->thread_ = std::thread([r = relay.get()] { r->serve(); });
  return relay;
}

WakeRelay::~WakeRelay() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  (void)!::write(stop_.get(), &one, sizeof one);
  thread_.join();
}

void WakeRelay::forward(uint64_t round) { pass_on(round, node_); }

// The binomial tree of broadcast_binomial (collectives/broadcast.cc) over
// the nodes renumbered from the origin: node v receives from v minus its
// lowest set bit and passes on to v + m for every power of two m below
// that bit (below the node count for the origin).
void WakeRelay::pass_on(uint64_t round, uint32_t origin) {
  const uint32_t n = static_cast<uint32_t>(peers_.size());
  if (n <= 1 || !sender_.valid()) return;
  const uint32_t v = (node_ + n - origin) % n;
  uint32_t low = 1;
  if (v == 0) {
    while (low < n) low <<= 1;
  } else {
    low = v & (~v + 1);
  }
  uint8_t d[kDatagramBytes];
  std::memcpy(d + sizeof(Key), &round, sizeof round);
  std::memcpy(d + sizeof(Key) + sizeof round, &origin, sizeof origin);
  for (uint32_t m = low >> 1; m > 0; m >>= 1) {
    if (v + m >= n) continue;
    const Peer& p = peers_[(origin + v + m) % n];
    std::memcpy(d, p.key.data(), p.key.size());
    // Best effort: a full socket buffer or an unreachable node only delays
    // the wake-up until the receiver's fallback round.
    (void)::sendto(sender_.get(), d, sizeof d, MSG_DONTWAIT | MSG_NOSIGNAL, p.addr.get(),
                   p.addr.len);
    sent_.fetch_add(1, std::memory_order_relaxed);
  }
}

void WakeRelay::serve() {
  pthread_setname_np(pthread_self(), "tandem-relay");
  pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) continue;
    uint8_t d[kDatagramBytes + 1];
    ssize_t n;
    while ((n = ::recv(listener_.get(), d, sizeof d, MSG_DONTWAIT)) >= 0) {
      // Anything but a datagram of the right size with this node's key is
      // somebody else's traffic: ignored.
      if (static_cast<size_t>(n) != kDatagramBytes || std::memcmp(d, key_.data(), key_.size()) != 0)
        continue;
      uint64_t round = 0;
      uint32_t origin = 0;
      std::memcpy(&round, d + sizeof(Key), sizeof round);
      std::memcpy(&origin, d + sizeof(Key) + sizeof round, sizeof origin);
      if (origin >= peers_.size() || origin == node_) continue;
      relayed_.fetch_add(1);  // first: whoever the doorbell wakes sees it counted
      ring_(round);
      pass_on(round, origin);
    }
  }
}

}  // namespace tcp

std::unique_ptr<RoundRelay> connect_wake_relay(Bootstrap& world, RingLocal ring, bool wanted,
                                               std::chrono::milliseconds timeout) {
  // Across nodes the relay listens where the transport would, and so needs
  // what the other nodes may listen on where it has to guess: one allgather
  // of every rank's candidates (interface_choice.h), the same on every rank.
  const Identity& id = world.identity();
  std::vector<std::vector<tcp::Ipv4Interface>> peers;
  if (id.cross_size > 1) {
    Bytes mine;
    tcp::append_candidates(mine);
    const std::vector<Bytes> all = world.allgather(mine, timeout);
    const bool nodes_known = id.node_of_rank.size() == all.size();
    for (size_t r = 0; r < all.size(); ++r) {
      if (static_cast<int>(r) == id.rank) continue;
      if (nodes_known && id.node_of_rank[r] == id.node_of_rank[id.rank]) continue;
      peers.push_back(tcp::parse_candidates(all[r], 0, static_cast<int>(r)));
    }
  }
  std::string why;
  return tcp::WakeRelay::create(world, std::move(ring), wanted,
                                tcp::choose_listen_address(false, why, peers), timeout);
}

}  // namespace tandem
