// connect_tcp(): the collective that sets up a group's TCP transport.
//
// Every world rank takes part (the bootstrap is world-wide), each for its own
// group. The steps, all bounded by `timeout`:
//   1. world rank 0 draws a random secret; the bootstrap broadcasts it;
//   2. each rank picks its address (interface.h), listens on an ephemeral
//      port and publishes the endpoint through the bootstrap allgather;
//      listening happens before publishing, so a peer never connects to a
//      port that is not open yet;
//   3. the group connects full-mesh and authenticates (mesh.h);
//   4. the listener is closed: later connection attempts are refused by the
//      kernel and cannot reach the job at all.
#include <algorithm>

#include "common/errors.h"
#include "transport/tcp/interface.h"
#include "transport/tcp/mesh.h"
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
  if (it == members.end())
    throw InvalidArgument(prefix + "the group does not contain this rank");
  return static_cast<int>(it - members.begin());
}

bool all_on_my_node(const Identity& id, const std::vector<int>& members) {
  if (id.node_of_rank.size() != static_cast<size_t>(id.size)) return false;
  const int mine = id.node_of_rank[id.rank];
  return std::all_of(members.begin(), members.end(),
                     [&](int r) { return id.node_of_rank[r] == mine; });
}

}  // namespace

std::unique_ptr<Transport> connect_tcp(Bootstrap& bootstrap, const std::vector<int>& members,
                                       std::chrono::milliseconds timeout) {
  const Identity& id = bootstrap.identity();
  const int index = check_members(id, members);
  const auto spin = tcp_spin_from_environment();  // a bad value fails before any exchange

  tcp::Secret secret{};
  if (id.rank == 0) secret = tcp::random_secret();
  const Bytes shared = bootstrap.broadcast(Bytes(secret.begin(), secret.end()), 0, timeout);
  if (shared.size() != secret.size())
    throw BootstrapError("connect_tcp: the job secret from world rank 0 has " +
                         std::to_string(shared.size()) + " bytes, expected " +
                         std::to_string(secret.size()));
  std::copy(shared.begin(), shared.end(), secret.begin());

  // A group of one needs no socket, but still joins the world's allgather.
  tcp::Fd listener;
  Bytes endpoint;
  if (members.size() > 1) {
    std::string why;
    tcp::SockAddr addr = tcp::choose_listen_address(all_on_my_node(id, members), why);
    try {
      listener = tcp::listen_on(addr);
    } catch (const SystemError& e) {
      throw SystemError(std::string(e.what()) + " (address chosen by " + why + ")", e.code());
    }
    endpoint = tcp::encode_endpoint(addr);
  }
  const std::vector<Bytes> all = bootstrap.allgather(endpoint, timeout);

  if (members.size() == 1) {
    std::vector<tcp::Fd> none(1);
    return std::make_unique<tcp::TcpTransport>(0, members, std::move(none),
                                               std::vector<std::string>{"(this rank)"}, timeout,
                                               spin);
  }
  tcp::MeshPlan plan;
  plan.world_rank = id.rank;
  plan.index = index;
  plan.members = members;
  plan.secret = secret;
  plan.timeout = timeout;
  std::vector<std::string> addresses;
  for (int r : members) {
    const auto a = tcp::decode_endpoint(all.at(static_cast<size_t>(r)));
    if (!a)
      throw BootstrapError("connect_tcp: world rank " + std::to_string(r) +
                           " published no TCP endpoint: every member of a group must call "
                           "connect_tcp with the same members, from the same Tandem version");
    plan.addrs.push_back(*a);
    addresses.push_back(tcp::to_string(*a));
  }
  std::vector<tcp::Fd> fds = tcp::connect_mesh(std::move(listener), plan);
  return std::make_unique<tcp::TcpTransport>(index, members, std::move(fds), std::move(addresses),
                                             timeout, spin);
}

}  // namespace tandem
