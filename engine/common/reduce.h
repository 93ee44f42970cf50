// Reduction kernels: every data type times every op, with pre/post scaling.
//
// Determinism: reduce() combines its inputs strictly in the order given
// (in[0] op in[1] op ... in[n-1]), so callers that always pass contributions
// in rank order get results that do not depend on arrival order, and every
// rank that computes the same element computes the same bits. float16 and
// bfloat16 are computed in float32 and rounded to their type after every
// step: each scaled input, each partial result, then the AVERAGE division
// and postscale (one float32 step) at the end. That is the arithmetic of
// the frameworks' own float16 operations and of Horovod's CPU kernels, whose
// tests compare bit for bit at up to 3 ranks; rounding once at the end
// would be more precise and differ from both.
#pragma once

#include <cstddef>
#include <string>

#include "tandem/tandem.h"

namespace tandem {

// Size in bytes of one element; 0 for a value outside the enum.
size_t dtype_size(int dtype);
// "float32", "sum"...; "unknown" outside the enums.
const char* dtype_name(int dtype);
const char* op_name(int op);
bool is_floating(tandem_dtype_t dtype);

// One stage of a reduction. A multi-stage reduction (inside the node, then
// across nodes) applies prescale in its first stage and finalize in its last.
struct Reduction {
  tandem_dtype_t dtype = TANDEM_FLOAT32;
  tandem_op_t op = TANDEM_SUM;
  double prescale = 1.0;   // multiplies every input (floating types only)
  bool finalize = true;    // apply the AVERAGE division and postscale
  double postscale = 1.0;  // multiplies the result (floating types only)
  int divisor = 1;         // AVERAGE divides by this: all contributing ranks
};

// Throws InvalidArgument (naming `what`, e.g. "allreduce") for an unknown
// dtype or op, AVERAGE on bool, or a scale other than 1 on an integer type.
void check_reduction(const char* what, int dtype, int op, double prescale, double postscale);

// Element i of a floating-point buffer (float16, bfloat16, float32,
// float64) as a double, and back: the store rounds to the type (float16
// and bfloat16 through float32, as their kernels round). For algorithms
// that accumulate in float64 whatever the element type (Adasum's dot
// products); 0 and no store for any other dtype.
double load_floating(tandem_dtype_t dtype, const void* buf, size_t i);
void store_floating(tandem_dtype_t dtype, void* buf, size_t i, double value);

// out[i] = finalize(in[0][i] op ... op in[n-1][i]) for i < count, n >= 1.
// out may be exactly one of the inputs (in place); no other overlap.
void reduce(void* out, const void* const* in, int n, size_t count, const Reduction& r);

}  // namespace tandem
