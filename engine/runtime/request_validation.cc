#include "runtime/request_validation.h"

#include <string_view>
#include <unordered_set>

#include "common/errors.h"

namespace tandem::runtime {
namespace {

// Adasum's rules (docs/runtime.md, Adasum), checked where the request is
// made so that the caller's rank raises before anything is negotiated.
void check_adasum(const std::string& what, OpType type, const TensorArg& t, int set_size) {
  if (type != OpType::kAllreduce)
    throw InvalidArgument(what +
                          ": Adasum combines whole tensors and has no reduce-scatter; "
                          "use Sum or Average");
  if (t.device != TANDEM_DEVICE_CPU)
    throw UnsupportedError(what +
                           ": Adasum runs on CPU tensors only; the tensor is on CUDA "
                           "device " +
                           std::to_string(t.device) +
                           ", copy it to the host (tensor.cpu()) for the allreduce");
  const bool floating = t.dtype == TANDEM_FLOAT16 || t.dtype == TANDEM_BFLOAT16 ||
                        t.dtype == TANDEM_FLOAT32 || t.dtype == TANDEM_FLOAT64;
  if (!floating)
    throw InvalidArgument(what + ": Adasum combines floating-point tensors only, got " +
                          dtype_name(t.dtype) + "; use float16, bfloat16, float32 or float64");
  if (set_size & (set_size - 1))
    throw InvalidArgument(what +
                          ": Adasum needs a power-of-two number of ranks (1, 2, 4, 8, "
                          "...); the process set has " +
                          std::to_string(set_size) + "; run on such a number or use Average");
}

}  // namespace

std::vector<Request> make_requests(const std::vector<TensorArg>& tensors, const OpArgs& args,
                                   const ProcessSet& set, int rank) {
  if (!set.member())
    throw InvalidArgument("rank " + std::to_string(rank) + " is not a member of process set " +
                          std::to_string(args.process_set));
  if (tensors.empty()) throw InvalidArgument("enqueue: no tensors given");
  const int set_size = static_cast<int>(set.global_ranks().size());
  std::vector<Request> requests;
  for (const TensorArg& t : tensors) {
    Request q;
    q.name = t.name;
    q.type = args.type;
    q.dtype = t.dtype;
    q.device = t.device;
    q.shape = t.shape;
    // Built only for an error message: enqueue runs for every tensor of every step.
    auto what = [&] { return std::string(op_type_name(args.type)) + " '" + t.name + "'"; };
    if (t.name.empty())
      throw InvalidArgument(std::string(op_type_name(args.type)) +
                            ": the tensor name is empty; give every tensor a "
                            "name that is the same on every rank");
    if (dtype_bytes(t.dtype) == 0)
      throw InvalidArgument(what() + ": unknown dtype " + std::to_string(t.dtype));
    // GPU tensors are negotiated like host ones and run on the device path
    // (device_path.h), which also reports an unusable GPU path on every rank.
    if (t.device < TANDEM_DEVICE_CPU)
      throw InvalidArgument(what() + ": device " + std::to_string(t.device) +
                            " is neither TANDEM_DEVICE_CPU (-1) nor a CUDA device index (>= 0)");
    for (int64_t d : t.shape)
      if (d < 0)
        throw InvalidArgument(what() + ": negative dimension in shape " + shape_string(t.shape));
    if (q.elements() > 0 && !t.input)
      throw InvalidArgument(what() + ": input is NULL but the shape " + shape_string(t.shape) +
                            " has elements");
    bool needs_output = args.type == OpType::kAllreduce || args.type == OpType::kBroadcast;
    if (needs_output && q.elements() > 0 && !t.output)
      throw InvalidArgument(what() +
                            ": output is NULL; pass the buffer for the result (it may "
                            "be the input)");
    if (args.type == OpType::kAllreduce || args.type == OpType::kReducescatter) {
      if (args.op < 0 || args.op >= TANDEM_OP_COUNT_)
        throw InvalidArgument(what() + ": unknown reduce op " + std::to_string(args.op));
      bool floating = t.dtype == TANDEM_FLOAT16 || t.dtype == TANDEM_BFLOAT16 ||
                      t.dtype == TANDEM_FLOAT32 || t.dtype == TANDEM_FLOAT64;
      if (!floating && (args.prescale != 1.0 || args.postscale != 1.0))
        throw InvalidArgument(what() + ": prescale/postscale must be 1.0 for " +
                              dtype_name(t.dtype) +
                              " tensors (scaling applies to floating "
                              "types only)");
      if (args.op == TANDEM_ADASUM) check_adasum(what(), args.type, t, set_size);
      q.op = args.op;
      q.prescale = args.prescale;
      q.postscale = args.postscale;
    }
    if (args.type == OpType::kBroadcast) {
      if (set.set_rank_of(args.root) < 0)
        throw InvalidArgument(what() + ": root " + std::to_string(args.root) +
                              " is not a rank of process set " + std::to_string(set.id()));
      q.root = args.root;
    }
    if ((args.type == OpType::kAllgather || args.type == OpType::kAlltoall ||
         args.type == OpType::kReducescatter) &&
        t.shape.empty())
      throw InvalidArgument(what() + ": needs at least one dimension (it works on the first)");
    if (args.type == OpType::kAlltoall) {
      if (args.splits.empty()) {
        if (t.shape[0] % set_size != 0)
          throw InvalidArgument(what() + ": first dimension " + std::to_string(t.shape[0]) +
                                " does not divide into " + std::to_string(set_size) +
                                " equal parts; pass splits");
        q.splits.assign(static_cast<size_t>(set_size), t.shape[0] / set_size);
      } else {
        if (static_cast<int>(args.splits.size()) != set_size)
          throw InvalidArgument(what() + ": " + std::to_string(args.splits.size()) +
                                " splits given, the process set has " + std::to_string(set_size) +
                                " ranks");
        int64_t sum = 0;
        for (int64_t s : args.splits) {
          if (s < 0)
            throw InvalidArgument(what() + ": negative split " + shape_string(args.splits));
          sum += s;
        }
        if (sum != t.shape[0])
          throw InvalidArgument(what() + ": splits " + shape_string(args.splits) + " sum to " +
                                std::to_string(sum) + ", the first dimension is " +
                                std::to_string(t.shape[0]));
        q.splits = args.splits;
      }
    }
    requests.push_back(std::move(q));
  }
  return requests;
}

void check_names_free(const std::vector<Request>& requests, const ProcessSet& set) {
  // A group's own names are compared pairwise when it is small (most are
  // one tensor), through a set when large.
  std::unordered_set<std::string_view> names;
  if (requests.size() > 8) names.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const Request& q = requests[i];
    bool repeated = false;
    if (requests.size() > 8) repeated = !names.insert(q.name).second;
    else
      for (size_t j = 0; j < i && !repeated; ++j) repeated = requests[j].name == q.name;
    if (repeated || set.pending.count(q.name))
      throw DuplicateNameError(std::string(op_type_name(q.type)) + " '" + q.name +
                               "': a tensor of this name is still in flight in process set " +
                               std::to_string(set.id()) +
                               "; wait for it to complete or use another name");
  }
}

}  // namespace tandem::runtime
