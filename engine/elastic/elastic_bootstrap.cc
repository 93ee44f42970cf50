#include "elastic/elastic_bootstrap.h"

#include "bootstrap/identity.h"
#include "common/errors.h"

namespace tandem {
namespace elastic {

namespace {
std::string ms_text(std::chrono::milliseconds t) { return std::to_string(t.count()) + " ms"; }
}  // namespace

ElasticBootstrap::ElasticBootstrap(ElasticClient& client, const Assignment& a)
    : client_(client),
      generation_(a.generation),
      identity_(identity_from_nodes(a.rank, a.nodes, a.job_id)),
      prefix_("g" + std::to_string(a.generation) + "/") {}

std::vector<Bytes> ElasticBootstrap::allgather(const Bytes& mine,
                                               std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string prefix = prefix_ + "ag/" + std::to_string(next_op_++) + "/";
  const std::string my_key = prefix + std::to_string(identity_.rank);
  auto earlier = std::move(own_keys_);
  own_keys_ = {my_key};
  std::vector<Bytes> out(static_cast<size_t>(identity_.size));
  try {
    client_.set(my_key, mine, deadline);
    for (int r = 0; r < identity_.size; ++r) {
      auto v = client_.get(prefix + std::to_string(r), deadline);
      if (!v)
        throw TimeoutError("elastic bootstrap allgather (generation " +
                           std::to_string(generation_) + "): rank " + std::to_string(r) +
                           " did not arrive within " + ms_text(timeout));
      out[static_cast<size_t>(r)] = std::move(*v);
    }
  } catch (const PeerLostError& e) {
    throw PeerLostError(std::string("elastic bootstrap allgather: ") + e.what());
  }
  for (const auto& k : earlier) client_.del(k);
  return out;
}

Bytes ElasticBootstrap::broadcast(const Bytes& value, int root, std::chrono::milliseconds timeout) {
  if (root < 0 || root >= identity_.size)
    throw InvalidArgument("bootstrap broadcast: root " + std::to_string(root) +
                          " is not a rank of this generation of size " +
                          std::to_string(identity_.size));
  const auto deadline = Clock::now() + timeout;
  const std::string key = prefix_ + "bc/" + std::to_string(next_op_++);
  try {
    if (identity_.rank == root) {
      client_.set(key, value, deadline);
      own_keys_.push_back(key);
      return value;
    }
    auto v = client_.get(key, deadline);
    if (!v)
      throw TimeoutError("elastic bootstrap broadcast: root rank " + std::to_string(root) +
                         " did not send within " + ms_text(timeout));
    return std::move(*v);
  } catch (const PeerLostError& e) {
    throw PeerLostError(std::string("elastic bootstrap broadcast: ") + e.what());
  }
}

}  // namespace elastic
}  // namespace tandem
