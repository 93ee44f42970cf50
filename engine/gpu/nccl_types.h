// Tandem's data types and reductions in NCCL's terms. Pure mapping, no NCCL
// call: tested without a GPU.
//
// Scales: NCCL has no post-scale step, and Tandem runs no kernels of its own
// (it would need the CUDA toolkit at build time and a kernel per type), so
// prescale and postscale fold into one ncclRedOpCreatePreMulSum factor:
// post * sum(pre * x) == sum(pre * post * x) up to rounding. Results are
// still identical on every rank; they may differ from the CPU path in the
// last bit. MIN, MAX and PRODUCT with a scale are refused on GPU tensors.
#pragma once

#include <nccl.h>

#include <cstdint>

#include "tandem/tandem.h"

namespace tandem {
namespace gpu {

ncclDataType_t nccl_dtype(tandem_dtype_t dtype);
// Bytes per element; throws InvalidArgument for an unknown type.
size_t element_bytes(tandem_dtype_t dtype);

struct NcclReduction {
  ncclDataType_t dtype = ncclFloat32;
  ncclRedOp_t op = ncclSum;  // a built-in op unless premul_sum
  bool premul_sum = false;   // create ncclRedOpCreatePreMulSum(factor) per call
  double factor = 1.0;
};

// Throws InvalidArgument (scales on integer types, unknown enum values) or
// UnsupportedError (scaled MIN/MAX/PRODUCT).
NcclReduction nccl_reduction(tandem_dtype_t dtype, tandem_op_t op, double prescale,
                             double postscale, int nranks);

// A host scalar in the bytes of dtype (float16 and bfloat16 rounded to
// nearest even), as ncclRedOpCreatePreMulSum wants it.
class ScalarBits {
 public:
  const void* data() const { return bytes_; }
  alignas(8) unsigned char bytes_[8] = {};
};
ScalarBits scalar_bits(double value, tandem_dtype_t dtype);
uint16_t float_to_half_bits(float value);
uint16_t float_to_bfloat16_bits(float value);

}  // namespace gpu
}  // namespace tandem
