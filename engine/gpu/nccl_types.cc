#include "gpu/nccl_types.h"

#include <cmath>
#include <cstring>
#include <string>

#include "common/errors.h"
#include "common/reduce.h"

namespace tandem {
namespace gpu {

ncclDataType_t nccl_dtype(tandem_dtype_t dtype) {
  switch (dtype) {
    case TANDEM_UINT8: return ncclUint8;
    case TANDEM_INT8: return ncclInt8;
    case TANDEM_INT32: return ncclInt32;
    case TANDEM_INT64: return ncclInt64;
    case TANDEM_FLOAT16: return ncclFloat16;
    case TANDEM_BFLOAT16: return ncclBfloat16;
    case TANDEM_FLOAT32: return ncclFloat32;
    case TANDEM_FLOAT64: return ncclFloat64;
    case TANDEM_BOOL: return ncclUint8;  // one byte, 0 or 1
    default: throw InvalidArgument("GPU tensor with unknown data type " + std::to_string(dtype));
  }
}

size_t element_bytes(tandem_dtype_t dtype) {
  // The sizes are the reduction kernels' (common/reduce.h); only the error is the GPU path's.
  const size_t bytes = dtype_size(dtype);
  if (bytes == 0)
    throw InvalidArgument("GPU tensor with unknown data type " + std::to_string(dtype));
  return bytes;
}

namespace {

bool is_float(tandem_dtype_t t) {
  return t == TANDEM_FLOAT16 || t == TANDEM_BFLOAT16 || t == TANDEM_FLOAT32 || t == TANDEM_FLOAT64;
}

const char* op_name(tandem_op_t op) {
  switch (op) {
    case TANDEM_SUM: return "SUM";
    case TANDEM_AVERAGE: return "AVERAGE";
    case TANDEM_MIN: return "MIN";
    case TANDEM_MAX: return "MAX";
    case TANDEM_PRODUCT: return "PRODUCT";
    default: return "?";
  }
}

}  // namespace

NcclReduction nccl_reduction(tandem_dtype_t dtype, tandem_op_t op, double prescale,
                             double postscale, int nranks) {
  NcclReduction r;
  r.dtype = nccl_dtype(dtype);
  if (op < 0 || op >= TANDEM_OP_COUNT_)
    throw InvalidArgument("GPU allreduce with unknown op " + std::to_string(op));
  if (op == TANDEM_ADASUM)
    throw UnsupportedError(
        "GPU allreduce with Adasum: NCCL has no Adasum and Tandem's GPU "
        "path runs none; allreduce CPU tensors with Adasum");
  const double factor = prescale * postscale;
  const bool scaled = prescale != 1.0 || postscale != 1.0;
  if (scaled && !is_float(dtype))
    throw InvalidArgument("prescale/postscale apply to floating types only; got prescale " +
                          std::to_string(prescale) + ", postscale " + std::to_string(postscale) +
                          " on an integer or bool tensor");
  if (dtype == TANDEM_BOOL) {
    // {0,1}: or == max, and == min; a sum could leave {0,1}.
    r.op = (op == TANDEM_SUM || op == TANDEM_MAX || op == TANDEM_AVERAGE) ? ncclMax : ncclMin;
    return r;
  }
  switch (op) {
    case TANDEM_SUM: r.op = ncclSum; break;
    case TANDEM_AVERAGE:
      r.op = ncclAvg;
      if (scaled) {
        r.premul_sum = true;
        r.factor = factor / nranks;
      }
      return r;
    case TANDEM_MIN: r.op = ncclMin; break;
    case TANDEM_MAX: r.op = ncclMax; break;
    case TANDEM_PRODUCT: r.op = ncclProd; break;
    default: break;
  }
  if (scaled && op != TANDEM_SUM)
    throw UnsupportedError(std::string("prescale/postscale with ") + op_name(op) +
                           " on GPU tensors: NCCL can only scale sums; scale the tensor before "
                           "or after the allreduce, or use SUM/AVERAGE");
  if (scaled) {
    r.premul_sum = true;
    r.factor = factor;
  }
  return r;
}

uint16_t float_to_bfloat16_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);  // stay a NaN
  bits += 0x7fff + ((bits >> 16) & 1);  // round to nearest, ties to even
  return static_cast<uint16_t>(bits >> 16);
}

uint16_t float_to_half_bits(float value) {
  uint32_t f;
  std::memcpy(&f, &value, 4);
  const uint16_t sign = static_cast<uint16_t>((f >> 16) & 0x8000);
  const float a = std::fabs(value);
  if (std::isnan(value)) return sign | 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00;  // rounds to infinity
  if (a < 6.103515625e-05f) {               // subnormal half: multiples of 2^-24
    return sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f));
  }
  uint32_t bits = f & 0x7fffffff;
  bits += 0x0fff + ((bits >> 13) & 1);  // round mantissa 23 -> 10 bits, ties to even
  return sign | static_cast<uint16_t>((bits >> 13) - ((127 - 15) << 10));
}

ScalarBits scalar_bits(double value, tandem_dtype_t dtype) {
  ScalarBits s;
  switch (dtype) {
    case TANDEM_FLOAT64: std::memcpy(s.bytes_, &value, 8); break;
    case TANDEM_FLOAT16: {
      const uint16_t h = float_to_half_bits(static_cast<float>(value));
      std::memcpy(s.bytes_, &h, 2);
      break;
    }
    case TANDEM_BFLOAT16: {
      const uint16_t b = float_to_bfloat16_bits(static_cast<float>(value));
      std::memcpy(s.bytes_, &b, 2);
      break;
    }
    default: {
      const float f = static_cast<float>(value);
      std::memcpy(s.bytes_, &f, 4);
    }
  }
  return s;
}

}  // namespace gpu
}  // namespace tandem
