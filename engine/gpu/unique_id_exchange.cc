#include "gpu/unique_id_exchange.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>

#include "common/errors.h"

namespace tandem {
namespace gpu {
namespace {

// Blob layout: set id (4 bytes, little end first), status (1 byte), then the
// id (status 0) or the root's error message (status 1).
constexpr uint8_t kOk = 0;
constexpr uint8_t kFailed = 1;
constexpr size_t kHeader = 5;

Bytes encode(int set_id, uint8_t status, const uint8_t* data, size_t size) {
  Bytes blob(kHeader + size);
  const auto id = static_cast<uint32_t>(set_id);
  for (int i = 0; i < 4; ++i) blob[i] = static_cast<uint8_t>(id >> (8 * i));
  blob[4] = status;
  if (size > 0) std::memcpy(blob.data() + kHeader, data, size);
  return blob;
}

Bytes root_blob(int set_id, UniqueIdSource& source) {
  try {
    const UniqueId id = source.create();
    return encode(set_id, kOk, id.data(), id.size());
  } catch (const std::exception& e) {
    const std::string msg = e.what();
    return encode(set_id, kFailed, reinterpret_cast<const uint8_t*>(msg.data()), msg.size());
  }
}

void check_members(const std::vector<int>& members, int world_size, int set_id) {
  if (members.empty())
    throw InvalidArgument("process set " + std::to_string(set_id) + " has no members");
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] < 0 || members[i] >= world_size)
      throw InvalidArgument("process set " + std::to_string(set_id) + ": rank " +
                            std::to_string(members[i]) + " is not in the world of " +
                            std::to_string(world_size) + " ranks");
    if (i > 0 && members[i] == members[i - 1])
      throw InvalidArgument("process set " + std::to_string(set_id) + " lists rank " +
                            std::to_string(members[i]) + " twice");
  }
}

}  // namespace

std::optional<UniqueId> exchange_unique_id(Bootstrap& bootstrap, int set_id,
                                           std::vector<int> members, UniqueIdSource& source,
                                           std::chrono::milliseconds timeout) {
  const Identity& me = bootstrap.identity();
  std::sort(members.begin(), members.end());
  check_members(members, me.size, set_id);
  const int root = members.front();
  const std::string label = "NCCL unique id for process set " + std::to_string(set_id);

  Bytes blob;
  try {
    blob =
        bootstrap.broadcast(me.rank == root ? root_blob(set_id, source) : Bytes{}, root, timeout);
  } catch (const TimeoutError& e) {
    throw TimeoutError(label + ": rank " + std::to_string(root) +
                       " (the set's first member, which creates it) did not send it within " +
                       std::to_string(timeout.count()) + " ms (" + e.what() +
                       "); is that rank alive and adding the same process set?");
  }
  if (blob.size() < kHeader)
    throw BootstrapError(label + ": rank " + std::to_string(root) + " sent " +
                         std::to_string(blob.size()) + " bytes, expected at least " +
                         std::to_string(kHeader));
  uint32_t got_set = 0;
  for (int i = 0; i < 4; ++i) got_set |= static_cast<uint32_t>(blob[i]) << (8 * i);
  if (static_cast<int>(got_set) != set_id)
    throw MismatchError(label + ": rank " + std::to_string(root) + " was adding process set " +
                        std::to_string(got_set) + " while rank " + std::to_string(me.rank) +
                        " was adding process set " + std::to_string(set_id) +
                        "; every rank must add process sets in the same order");
  if (blob[4] == kFailed)
    throw BootstrapError(label + ": rank " + std::to_string(root) + " could not create it: " +
                         std::string(blob.begin() + kHeader, blob.end()));
  if (blob[4] != kOk || blob.size() != kHeader + kUniqueIdBytes)
    throw BootstrapError(label + ": rank " + std::to_string(root) + " sent a malformed id (" +
                         std::to_string(blob.size()) + " bytes, status " + std::to_string(blob[4]) +
                         ")");
  if (!std::binary_search(members.begin(), members.end(), me.rank)) return std::nullopt;
  UniqueId id;
  std::memcpy(id.data(), blob.data() + kHeader, kUniqueIdBytes);
  return id;
}

}  // namespace gpu
}  // namespace tandem
