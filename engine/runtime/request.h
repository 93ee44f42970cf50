// What one rank asks for: a named operation with everything the ranks must
// agree on (type, dtype, shape, op, root, scales, splits). Requests are
// exchanged between the ranks of a process set every cycle (see
// cycle_message.h) and compared field by field by the coordinator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/reduce.h"
#include "tandem/tandem.h"

namespace tandem::runtime {

enum class OpType : uint8_t {
  kAllreduce = 0,
  kBroadcast = 1,
  kAllgather = 2,
  kAlltoall = 3,
  kReducescatter = 4,
  kBarrier = 5,
  // Internal, on the global set: process set changes are negotiated like
  // tensors so that every rank applies them at the same point. The ranks
  // to add travel in `shape`, the set to remove in `root`.
  kAddProcessSet = 6,
  kRemoveProcessSet = 7,
};

const char* op_type_name(OpType type);
// Names and sizes of the public enums: one table, in the collectives layer.
inline size_t dtype_bytes(int dtype) { return tandem::dtype_size(dtype); }
using tandem::dtype_name;
inline const char* reduce_op_name(int op) { return tandem::op_name(op); }

struct Request {
  std::string name;
  OpType type = OpType::kAllreduce;
  int32_t dtype = TANDEM_FLOAT32;
  int32_t device = TANDEM_DEVICE_CPU;
  int32_t op = TANDEM_SUM;
  int32_t root = -1;  // broadcast: global rank
  double prescale = 1.0;
  double postscale = 1.0;
  std::vector<int64_t> shape;
  std::vector<int64_t> splits;  // alltoall rows sent to each set rank

  int64_t elements() const;
  size_t bytes() const { return static_cast<size_t>(elements()) * dtype_bytes(dtype); }
  // Elements in one row (product of shape[1:]); 1 for scalars.
  int64_t row_elements() const;
  bool operator==(const Request& o) const;
  bool operator!=(const Request& o) const { return !(*this == o); }
};

std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace tandem::runtime
