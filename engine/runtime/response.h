// What the ranks of a process set decided to run: one tensor (or a join),
// with the requests of every member so that each rank can size buffers and
// joined ranks can contribute the identity. A non-empty `error` means the
// ranks disagreed; every rank fails its handle for the tensor with it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/request.h"

namespace tandem::runtime {

struct Response {
  enum class Kind { kTensor, kJoin };
  Kind kind = Kind::kTensor;
  std::string name;
  OpType type = OpType::kAllreduce;
  // By set rank. present[r] is false for a joined rank that did not ask;
  // per_rank()[r] then holds a copy of a present rank's request. Shared
  // with the response cache: a step of cached tensors copies no request.
  std::shared_ptr<const std::vector<Request>> requests;
  std::vector<bool> present;
  std::optional<size_t> cache_bit;  // set when agreed through the cache

  // Failure shared by every rank: a result code and a message.
  tandem_result_t error_code = TANDEM_SUCCESS;
  std::string error;

  int last_joined_rank = -1;  // join: global rank of the last rank to join

  const std::vector<Request>& per_rank() const { return *requests; }
  const Request& first() const;
  bool any_absent() const;
};

}  // namespace tandem::runtime
