#include "runtime/executor.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "common/errors.h"
#include "shm/stream_copy.h"

namespace tandem::runtime {
namespace {

template <typename T>
void fill(void* dst, size_t count, T value) {
  T* p = static_cast<T*>(dst);
  for (size_t i = 0; i < count; ++i) p[i] = value;
}

template <typename T>
void fill_numeric(void* dst, size_t count, int op) {
  switch (op) {
    case TANDEM_PRODUCT: fill<T>(dst, count, T(1)); break;
    case TANDEM_MIN:
      fill<T>(dst, count,
              std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                   : std::numeric_limits<T>::max());
      break;
    case TANDEM_MAX:
      fill<T>(dst, count,
              std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                   : std::numeric_limits<T>::lowest());
      break;
    default: std::memset(dst, 0, count * sizeof(T)); break;
  }
}

// 16-bit floats are filled by bit pattern: one, +inf, -inf.
void fill_half(void* dst, size_t count, int op, uint16_t one, uint16_t inf, uint16_t ninf) {
  switch (op) {
    case TANDEM_PRODUCT: fill<uint16_t>(dst, count, one); break;
    case TANDEM_MIN: fill<uint16_t>(dst, count, inf); break;
    case TANDEM_MAX: fill<uint16_t>(dst, count, ninf); break;
    default: std::memset(dst, 0, count * 2); break;
  }
}

size_t to_size(int64_t v) { return static_cast<size_t>(v); }

}  // namespace

void fill_identity(void* dst, size_t count, int dtype, int op) {
  switch (dtype) {
    case TANDEM_UINT8: fill_numeric<uint8_t>(dst, count, op); break;
    case TANDEM_INT8: fill_numeric<int8_t>(dst, count, op); break;
    case TANDEM_INT32: fill_numeric<int32_t>(dst, count, op); break;
    case TANDEM_INT64: fill_numeric<int64_t>(dst, count, op); break;
    case TANDEM_FLOAT32: fill_numeric<float>(dst, count, op); break;
    case TANDEM_FLOAT64: fill_numeric<double>(dst, count, op); break;
    case TANDEM_FLOAT16: fill_half(dst, count, op, 0x3C00, 0x7C00, 0xFC00); break;
    case TANDEM_BFLOAT16: fill_half(dst, count, op, 0x3F80, 0x7F80, 0xFF80); break;
    case TANDEM_BOOL:  // min and product are "and", sum and max are "or"
      fill<uint8_t>(dst, count, op == TANDEM_MIN || op == TANDEM_PRODUCT ? 1 : 0);
      break;
    default: throw InvalidArgument("unknown dtype " + std::to_string(dtype));
  }
}

namespace {

// Adasum's coefficients come from each tensor's own elements, so the data
// path is told where the tensors of the batch begin and end; the batch is
// packed whole first (Adasum reads every element several times).
void run_adasum_batch(ExecContext& ctx, const std::vector<const Response*>& responses,
                      const std::vector<TensorEntry*>& entries, size_t total_bytes) {
  const Request& lead = responses.front()->first();
  auto* buf = static_cast<uint8_t*>(ctx.data_path.fusion_buffer(total_bytes));
  std::vector<size_t> counts;
  size_t offset = 0;
  for (size_t i = 0; i < responses.size(); ++i) {
    const Request& q = responses[i]->first();
    ctx.timeline.end(q.name);  // QUEUE
    ctx.timeline.begin(q.name, "COPY_IN");
    // A joined rank's missing tensor is zeros: Adasum(a, 0) = a.
    if (entries[i] && q.bytes() > 0) std::memcpy(buf + offset, entries[i]->input, q.bytes());
    else std::memset(buf + offset, 0, q.bytes());
    ctx.timeline.end(q.name);
    ctx.timeline.begin(q.name, "ADASUM");
    counts.push_back(to_size(q.elements()));
    offset += q.bytes();
  }
  ctx.data_path.adasum(buf, counts, static_cast<tandem_dtype_t>(lead.dtype), lead.prescale,
                       lead.postscale);
  offset = 0;
  for (size_t i = 0; i < responses.size(); ++i) {
    const Request& q = responses[i]->first();
    ctx.timeline.end(q.name);
    ctx.timeline.begin(q.name, "COPY_OUT");
    if (entries[i] && q.bytes() > 0) std::memcpy(entries[i]->output, buf + offset, q.bytes());
    ctx.timeline.end(q.name);
    offset += q.bytes();
  }
}

}  // namespace

void run_allreduce_batch(ExecContext& ctx, const std::vector<const Response*>& responses,
                         const std::vector<TensorEntry*>& entries, size_t total_bytes) {
  const Request& lead = responses.front()->first();
  if (lead.op == TANDEM_ADASUM) return run_adasum_batch(ctx, responses, entries, total_bytes);
  const size_t esize = dtype_bytes(lead.dtype);
  auto* buf = static_cast<uint8_t*>(ctx.data_path.fusion_buffer(total_bytes));
  // When this rank has every tensor of the batch (it has not joined), the
  // data path reads the inputs where they lie (an InputSource): it copies
  // into the fusion buffer only the parts peers read in place, and reduces
  // this rank's own parts straight from the tensors. Else (identity values
  // for a joined rank's missing tensors) everything is packed here first.
  struct Piece {
    size_t offset;
    size_t bytes;
    const uint8_t* src;
  };
  std::vector<Piece> pieces;
  pieces.reserve(responses.size());
  bool all_mine = true;
  size_t offset = 0;
  for (size_t i = 0; i < responses.size(); ++i) {
    const Request& q = responses[i]->first();
    if (!entries[i]) all_mine = false;
    else if (q.bytes() > 0)
      pieces.push_back({offset, q.bytes(), static_cast<const uint8_t*>(entries[i]->input)});
    offset += q.bytes();
  }
  offset = 0;
  for (size_t i = 0; i < responses.size(); ++i) {
    const Request& q = responses[i]->first();
    ctx.timeline.end(q.name);  // QUEUE
    ctx.timeline.begin(q.name, "COPY_IN");
    if (!all_mine) {
      if (entries[i] && q.bytes() > 0) std::memcpy(buf + offset, entries[i]->input, q.bytes());
      else fill_identity(buf + offset, to_size(q.elements()), q.dtype, q.op);
    }
    ctx.timeline.end(q.name);
    ctx.timeline.begin(q.name, "ALLREDUCE");
    offset += q.bytes();
  }
  DataPath::InputSource source = [&](size_t at, size_t* bytes) -> const void* {
    auto it = std::upper_bound(pieces.begin(), pieces.end(), at,
                               [](size_t a, const Piece& p) { return a < p.offset; });
    if (it == pieces.begin()) return nullptr;
    --it;
    if (at >= it->offset + it->bytes) return nullptr;
    *bytes = it->offset + it->bytes - at;
    return it->src + (at - it->offset);
  };
  // The result goes straight from the reduction into the tensors (no pass
  // over the fusion buffer): each piece is cut at tensor boundaries. Pieces
  // come in increasing offset order, so a cursor finds the tensor.
  struct Target {
    size_t offset;
    size_t bytes;
    uint8_t* dst;
    bool streaming;  // non-temporal stores: large, and not in place (stream_results)
  };
  std::vector<Target> targets;
  targets.reserve(responses.size());
  offset = 0;
  for (size_t i = 0; i < responses.size(); ++i) {
    const Request& q = responses[i]->first();
    // An output that is its own input (hvd.allreduce_, the optimizers'
    // gradients) was read by the same step that writes it back.
    if (entries[i] && q.bytes() > 0)
      targets.push_back({offset, q.bytes(), static_cast<uint8_t*>(entries[i]->output),
                         stream_results(total_bytes, entries[i]->output == entries[i]->input)});
    offset += q.bytes();
  }
  size_t cursor = 0;
  auto unpack = [&](size_t at, const void* data, size_t bytes) {
    const auto* src = static_cast<const uint8_t*>(data);
    if (cursor >= targets.size() || targets[cursor].offset > at) cursor = 0;
    while (bytes > 0) {
      while (cursor < targets.size() && targets[cursor].offset + targets[cursor].bytes <= at)
        ++cursor;
      if (cursor == targets.size()) return;  // the rest belongs to no output (joined ranks)
      const Target& t = targets[cursor];
      if (t.offset > at) {  // a gap: a member without output on this rank
        const size_t skip = std::min(bytes, t.offset - at);
        at += skip, src += skip, bytes -= skip;
        continue;
      }
      const size_t n = std::min(bytes, t.offset + t.bytes - at);
      if (t.streaming) stream_copy(t.dst + (at - t.offset), src, n);
      else std::memcpy(t.dst + (at - t.offset), src, n);
      at += n, src += n, bytes -= n;
    }
  };
  ctx.data_path.allreduce_to(buf, total_bytes / esize, static_cast<tandem_dtype_t>(lead.dtype),
                             static_cast<tandem_op_t>(lead.op), lead.prescale, lead.postscale,
                             unpack, all_mine ? &source : nullptr);
  // The copy out happened inside the collective; COPY_OUT marks its end.
  for (size_t i = 0; i < responses.size(); ++i) {
    const Request& q = responses[i]->first();
    ctx.timeline.end(q.name);
    ctx.timeline.begin(q.name, "COPY_OUT");
    ctx.timeline.end(q.name);
  }
}

namespace {

void run_broadcast(ExecContext& ctx, const Response& r, TensorEntry& e) {
  const Request& q = e.request;
  int root = -1;
  for (size_t k = 0; k < ctx.members.size(); ++k)
    if (ctx.members[k] == q.root) root = static_cast<int>(k);
  if (root == ctx.set_rank && e.output != e.input && q.bytes() > 0)
    std::memcpy(e.output, e.input, q.bytes());
  (void)r;
  ctx.data_path.broadcast(e.output, q.bytes(), root);
}

void run_allgather(ExecContext& ctx, const Response& r, TensorEntry& e, TensorOutput* out) {
  const Request& q = e.request;
  const size_t row_bytes = to_size(q.row_elements()) * dtype_bytes(q.dtype);
  std::vector<size_t> recv(r.per_rank().size());
  int64_t rows = 0;
  for (size_t k = 0; k < r.per_rank().size(); ++k) {
    int64_t d0 = r.per_rank()[k].shape.empty() ? 1 : r.per_rank()[k].shape[0];
    recv[k] = to_size(d0) * row_bytes;
    rows += d0;
  }
  out->shape = q.shape.empty() ? std::vector<int64_t>{rows} : q.shape;
  out->shape[0] = rows;
  out->data.resize(std::accumulate(recv.begin(), recv.end(), size_t{0}));
  ctx.data_path.allgatherv(e.input, recv[ctx.set_rank], out->data.data(), recv);
}

void run_alltoall(ExecContext& ctx, const Response& r, TensorEntry& e, TensorOutput* out,
                  std::vector<int64_t>* received) {
  const Request& q = e.request;
  const size_t n = r.per_rank().size();
  const size_t row_bytes = to_size(q.row_elements()) * dtype_bytes(q.dtype);
  std::vector<size_t> send(n), recv(n);
  received->assign(n, 0);
  int64_t rows = 0;
  for (size_t k = 0; k < n; ++k) {
    send[k] = to_size(q.splits[k]) * row_bytes;
    int64_t in = r.per_rank()[k].splits[ctx.set_rank];
    (*received)[k] = in;
    recv[k] = to_size(in) * row_bytes;
    rows += in;
  }
  out->shape = q.shape;
  out->shape[0] = rows;
  out->data.resize(std::accumulate(recv.begin(), recv.end(), size_t{0}));
  ctx.data_path.alltoallv(e.input, send, out->data.data(), recv);
}

void run_reducescatter(ExecContext& ctx, const Response& r, TensorEntry& e, TensorOutput* out) {
  const Request& q = e.request;
  const int64_t n = static_cast<int64_t>(r.per_rank().size());
  const int64_t rows = q.shape[0];
  std::vector<size_t> counts(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    counts[k] = to_size((rows / n + (k < rows % n ? 1 : 0)) * q.row_elements());
  out->shape = q.shape;
  out->shape[0] = rows / n + (ctx.set_rank < rows % n ? 1 : 0);
  out->data.resize(counts[ctx.set_rank] * dtype_bytes(q.dtype));
  ctx.data_path.reducescatter(e.input, out->data.data(), counts,
                              static_cast<tandem_dtype_t>(q.dtype), static_cast<tandem_op_t>(q.op),
                              q.prescale, q.postscale);
}

}  // namespace

void run_single(ExecContext& ctx, const Response& r, TensorEntry& e, TensorOutput* out,
                std::vector<int64_t>* received_splits) {
  const std::string& name = e.request.name;
  ctx.timeline.end(name);  // QUEUE
  ctx.timeline.begin(name, r.type == OpType::kBroadcast       ? "BROADCAST"
                           : r.type == OpType::kAllgather     ? "ALLGATHER"
                           : r.type == OpType::kAlltoall      ? "ALLTOALL"
                           : r.type == OpType::kReducescatter ? "REDUCESCATTER"
                                                              : "BARRIER");
  switch (r.type) {
    case OpType::kBroadcast: run_broadcast(ctx, r, e); break;
    case OpType::kAllgather: run_allgather(ctx, r, e, out); break;
    case OpType::kAlltoall: run_alltoall(ctx, r, e, out, received_splits); break;
    case OpType::kReducescatter: run_reducescatter(ctx, r, e, out); break;
    default: break;
  }
  ctx.timeline.end(name);
}

}  // namespace tandem::runtime
