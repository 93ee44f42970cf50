// connect_tcp(): the collective that sets up a group's TCP transport.
//
// Every world rank takes part (the bootstrap is world-wide), each for its own
// group. The steps, all bounded by `timeout`:
//   1. world rank 0 draws a random secret and picks the connection scheme
//      (TANDEM_TCP_CONNECT); the bootstrap broadcasts both;
//   2. each rank checks that its planned connections fit under its
//      descriptor limit, picks its address (interface.h), listens on an
//      ephemeral port and publishes the endpoint through the bootstrap
//      allgather; listening happens before publishing, so a peer never
//      connects to a port that is not open yet;
//   3. the planned pairs connect and authenticate (connector.h): the peers
//      the algorithms use, or every pair with the scheme `all`;
//   4. once every pair is connected (always with `all`) the listener is
//      closed: later connection attempts are refused by the kernel and
//      cannot reach the job at all. Otherwise it stays open for the peers
//      connected on first use, and rejects (and logs) anyone else.
#include <poll.h>

#include <algorithm>
#include <cerrno>

#include "common/errors.h"
#include "common/log.h"
#include "common/settings.h"
#include "transport/tcp/connector.h"
#include "transport/tcp/descriptors.h"
#include "transport/tcp/interface.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/tcp_transport_impl.h"
#include "transport/tcp/wire.h"

namespace tandem {
namespace {

int check_members(const Identity& id, const std::vector<int>& members) {
  const std::string prefix = "connect_tcp on world rank " + std::to_string(id.rank) + ": ";
  if (members.empty()) throw InvalidArgument(prefix + "the group is empty");
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] < 0 || members[i] >= id.size)
      throw InvalidArgument(prefix + "member " + std::to_string(members[i]) +
                            " is not a world rank (world size " + std::to_string(id.size) + ")");
    if (i > 0 && members[i] <= members[i - 1])
      throw InvalidArgument(prefix + "members must be ascending and distinct, got " +
                            std::to_string(members[i - 1]) + " before " +
                            std::to_string(members[i]));
  }
  const auto it = std::find(members.begin(), members.end(), id.rank);
  if (it == members.end()) throw InvalidArgument(prefix + "the group does not contain this rank");
  return static_cast<int>(it - members.begin());
}

bool all_on_my_node(const Identity& id, const std::vector<int>& members) {
  if (id.node_of_rank.size() != static_cast<size_t>(id.size)) return false;
  const int mine = id.node_of_rank[id.rank];
  return std::all_of(members.begin(), members.end(),
                     [&](int r) { return id.node_of_rank[r] == mine; });
}

// Descriptors a transport holds besides its sockets: the listener, the
// connector's epoll set and retry timer, the transport's wake-up eventfd.
constexpr size_t kFixedDescriptors = 4;

std::vector<int> checked_plan(int index, int n, const std::vector<int>& planned) {
  std::vector<int> out;
  for (int j : planned) {
    if (j < 0 || j >= n || j == index)
      throw InvalidArgument("connect_tcp: planned peer " + std::to_string(j) +
                            " is not another index of this group of " + std::to_string(n));
    out.push_back(j);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Connects the planned peers, serving every handshake of this rank until
// they are all there or the deadline passes.
void connect_planned(tcp::Connector& links, const std::vector<int>& peers,
                     std::chrono::milliseconds timeout, int world_rank) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int j : peers) links.want(j);
  for (;;) {
    links.serve();
    if (std::all_of(peers.begin(), peers.end(), [&](int j) { return links.socket_of(j) >= 0; }))
      return;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      std::string missing;
      int shown = 0, left = 0;
      for (int j : peers) {
        if (links.socket_of(j) >= 0) continue;
        if (shown++ < 16) missing += "\n  " + links.waiting_for(j);
        else ++left;
      }
      if (left > 0) missing += "\n  and " + std::to_string(left) + " more";
      throw TimeoutError("tcp setup (world rank " + std::to_string(world_rank) + "): after " +
                         std::to_string(timeout.count()) + " ms" + missing +
                         "\nAre those ranks running, and is the address reachable from here? "
                         "Set TANDEM_TCP_IFNAME to an interface that reaches them.");
    }
    pollfd p{links.wait_fd(), POLLIN, 0};
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
    if (::poll(&p, 1, static_cast<int>(ms)) < 0 && errno != EINTR)
      throw SystemError("tcp setup: poll", errno);
  }
}

// World rank 0's secret and connection scheme, in one round; every rank
// parses its own setting so that a malformed one is an error wherever it is.
// When the job spans nodes the round is an allgather instead of a broadcast,
// and every rank adds the IPv4 addresses it may listen on: a rank that has to
// guess its interface (no setting, no default route, several candidates)
// then picks the one on its peers' subnet, as MPI's TCP layers do.
struct Agreed {
  tcp::Secret secret{};
  ConnectScheme scheme = ConnectScheme::kPlanned;
  std::vector<std::vector<tcp::Ipv4Interface>> candidates;  // by world rank; empty on one node
};

Agreed agree(Bootstrap& bootstrap, std::chrono::milliseconds timeout) {
  (void)connect_scheme_from_environment();
  const Identity& id = bootstrap.identity();
  const bool nodes = id.cross_size > 1;
  Bytes mine;
  if (id.rank == 0) {
    const tcp::Secret s = tcp::random_secret();
    mine.assign(s.begin(), s.end());
    mine.push_back(static_cast<uint8_t>(connect_scheme_from_environment()));
  }
  Agreed a;
  const size_t agreed_bytes = a.secret.size() + 1;
  Bytes shared;
  if (nodes) {
    if (id.rank != 0) mine.assign(agreed_bytes, 0);
    tcp::append_candidates(mine);
    const std::vector<Bytes> all = bootstrap.allgather(mine, timeout);
    for (size_t r = 0; r < all.size(); ++r)
      a.candidates.push_back(tcp::parse_candidates(all[r], agreed_bytes, static_cast<int>(r)));
    shared.assign(all.at(0).begin(), all.at(0).begin() + static_cast<std::ptrdiff_t>(std::min(
                                                             agreed_bytes, all.at(0).size())));
  } else {
    shared = bootstrap.broadcast(mine, 0, timeout);
  }
  if (shared.size() != agreed_bytes)
    throw BootstrapError("connect_tcp: the job secret from world rank 0 has " +
                         std::to_string(shared.size()) + " bytes, expected " +
                         std::to_string(agreed_bytes) +
                         ": every rank must run the same Tandem version");
  std::copy(shared.begin(), shared.begin() + static_cast<std::ptrdiff_t>(a.secret.size()),
            a.secret.begin());
  a.scheme = static_cast<ConnectScheme>(shared.back());
  return a;
}

// What the members on other nodes may listen on, for this rank's choice.
std::vector<std::vector<tcp::Ipv4Interface>> peer_candidates(const Identity& id,
                                                             const std::vector<int>& members,
                                                             const Agreed& agreed) {
  std::vector<std::vector<tcp::Ipv4Interface>> out;
  if (agreed.candidates.empty()) return out;
  const bool nodes_known = id.node_of_rank.size() == static_cast<size_t>(id.size);
  for (int r : members) {
    if (r == id.rank) continue;
    if (nodes_known && id.node_of_rank[r] == id.node_of_rank[id.rank]) continue;
    out.push_back(agreed.candidates.at(static_cast<size_t>(r)));
  }
  return out;
}

// Checks the descriptor budget, then listens; the endpoint to publish.
tcp::Fd listen_for(const Identity& id, const std::vector<int>& members, size_t peers, bool everyone,
                   const Agreed& agreed, Bytes& endpoint) {
  const std::string n = std::to_string(members.size());
  tcp::check_descriptor_budget(
      "tcp setup (world rank " + std::to_string(id.rank) + ")", peers + kFixedDescriptors,
      std::to_string(peers) +
          (everyone ? " connections, one to every other rank of a group of " + n
                    : " connections the algorithms use in a group of " + n) +
          ", and " + std::to_string(kFixedDescriptors) + " for the listener and wake-ups" +
          (everyone ? "; TANDEM_TCP_CONNECT=planned needs about 2 log2(n)" : ""));
  std::string why;
  tcp::SockAddr addr = tcp::choose_listen_address(all_on_my_node(id, members), why,
                                                  peer_candidates(id, members, agreed));
  tcp::Fd listener;
  try {
    listener = tcp::listen_on(addr);
  } catch (const SystemError& e) {
    throw SystemError(std::string(e.what()) + " (address chosen by " + why + ")", e.code());
  }
  endpoint = tcp::encode_endpoint(addr);
  TANDEM_DEBUG(tcp, "group of %zu: listening on %s (%s)", members.size(),
               tcp::to_string(addr).c_str(), why.c_str());
  return listener;
}

std::vector<tcp::SockAddr> endpoints_of(const std::vector<int>& members,
                                        const std::vector<Bytes>& all) {
  std::vector<tcp::SockAddr> out;
  for (int r : members) {
    const auto a = tcp::decode_endpoint(all.at(static_cast<size_t>(r)));
    if (!a)
      throw BootstrapError("connect_tcp: world rank " + std::to_string(r) +
                           " published no TCP endpoint: every member of a group must call "
                           "connect_tcp with the same members, from the same Tandem version");
    out.push_back(*a);
  }
  return out;
}

std::unique_ptr<Transport> connect_with(Bootstrap& bootstrap, const std::vector<int>& members,
                                        std::chrono::milliseconds timeout,
                                        const std::vector<int>* planned) {
  const Identity& id = bootstrap.identity();
  const int index = check_members(id, members);
  const int n = static_cast<int>(members.size());
  // Bad values fail before any exchange.
  const auto spin = tcp_spin_from_environment();
  const size_t piece = tcp_piece_from_environment();
  const std::vector<int> plan = planned ? checked_plan(index, n, *planned) : std::vector<int>{};
  const Agreed agreed = agree(bootstrap, timeout);
  const bool everyone = planned == nullptr || agreed.scheme == ConnectScheme::kAll;
  std::vector<int> peers = plan;
  if (everyone) {
    peers.clear();
    for (int j = 0; j < n; ++j)
      if (j != index) peers.push_back(j);
  }
  // A group of one needs no socket, but still joins the world's allgather.
  Bytes endpoint;
  tcp::Fd listener;
  if (n > 1) listener = listen_for(id, members, peers.size(), everyone, agreed, endpoint);
  const std::vector<Bytes> all = bootstrap.allgather(endpoint, timeout);
  if (n == 1) return std::make_unique<tcp::TcpTransport>(0, members, nullptr, timeout, spin, piece);

  tcp::ConnectPlan cp;
  cp.world_rank = id.rank;
  cp.index = index;
  cp.members = members;
  cp.secret = agreed.secret;
  cp.timeout = timeout;
  cp.addrs = endpoints_of(members, all);
  auto links = std::make_unique<tcp::Connector>(std::move(listener), std::move(cp));
  connect_planned(*links, peers, timeout, id.rank);
  links->end_setup();
  if (TANDEM_LOG_ENABLED(kDebug, tcp)) {
    std::string connected;
    for (int j : peers) connected += (connected.empty() ? "" : ", ") + links->who(j);
    if (connected.empty()) connected = "none; every peer connects on first use";
    TANDEM_DEBUG(tcp, "group of %d: connected and authenticated at set-up (%s): %s", n,
                 everyone ? "every pair" : "the peers the algorithms use", connected.c_str());
  }
  return std::make_unique<tcp::TcpTransport>(index, members, std::move(links), timeout, spin,
                                             piece);
}

}  // namespace

std::unique_ptr<Transport> connect_tcp(Bootstrap& bootstrap, const std::vector<int>& members,
                                       std::chrono::milliseconds timeout) {
  return connect_with(bootstrap, members, timeout, nullptr);
}

std::unique_ptr<Transport> connect_tcp(Bootstrap& bootstrap, const std::vector<int>& members,
                                       std::chrono::milliseconds timeout,
                                       const std::vector<int>& planned) {
  return connect_with(bootstrap, members, timeout, &planned);
}

ConnectScheme connect_scheme_from_environment() {
  const std::string v = env_string(kConnectVariable);
  if (v == "planned") return ConnectScheme::kPlanned;
  if (v == "all") return ConnectScheme::kAll;
  throw InvalidArgument(std::string(kConnectVariable) + "='" + v +
                        "' is not a connection scheme; expected planned (the peers the "
                        "algorithms use, others on first use) or all (every pair at start-up)");
}

}  // namespace tandem
