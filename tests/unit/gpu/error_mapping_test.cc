// CUDA/NCCL results as Tandem's typed errors, and the NCCL type/op mapping.
#include <gtest/gtest.h>

#include <cstring>

#include "common/errors.h"
#include "gpu/gpu_errors.h"
#include "gpu/nccl_types.h"

namespace tandem {
namespace gpu {
namespace {

template <typename E>
std::string expect_type(std::exception_ptr p) {
  try {
    std::rethrow_exception(p);
  } catch (const E& e) { return e.what(); } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong type for: " << e.what();
  }
  return "";
}

TEST(ErrorMapping, NcclResults) {
  auto m = expect_type<PeerLostError>(
      nccl_error(ncclRemoteError, "ncclAllReduce on process set 0", "remote"));
  EXPECT_NE(m.find("ncclAllReduce on process set 0 failed"), std::string::npos) << m;
  EXPECT_NE(m.find("a peer process exited"), std::string::npos) << m;
  expect_type<InvalidArgument>(nccl_error(ncclInvalidArgument, "x", ""));
  expect_type<InvalidArgument>(nccl_error(ncclInvalidUsage, "x", "Duplicate GPU detected"));
  m = expect_type<DeviceError>(nccl_error(ncclSystemError, "x", "socket"));
  EXPECT_NE(m.find("NCCL_DEBUG=WARN"), std::string::npos);
  expect_type<DeviceError>(nccl_error(ncclUnhandledCudaError, "x", ""));
  expect_type<DeviceError>(nccl_error(ncclInternalError, "x", ""));
}

TEST(ErrorMapping, CudaErrors) {
  auto m = expect_type<UnsupportedError>(cuda_error(cudaErrorNoDevice, "cudaErrorNoDevice",
                                                    "cudaSetDevice(0)",
                                                    "no CUDA-capable device is detected"));
  EXPECT_NE(m.find("cudaSetDevice(0) failed: cudaErrorNoDevice (100)"), std::string::npos) << m;
  expect_type<UnsupportedError>(cuda_error(cudaErrorInsufficientDriver, "n", "x", "d"));
  m = expect_type<InvalidArgument>(cuda_error(cudaErrorInvalidDevice, "n", "x", "d"));
  EXPECT_NE(m.find("TANDEM_GPU_DEVICE"), std::string::npos);
  m = expect_type<DeviceError>(
      cuda_error(cudaErrorMemoryAllocation, "n", "cudaMalloc", "out of memory"));
  EXPECT_NE(m.find("HOROVOD_FUSION_THRESHOLD"), std::string::npos);
  expect_type<DeviceError>(cuda_error(cudaErrorIllegalAddress, "n", "x", "d"));
}

TEST(NcclTypes, DataTypes) {
  EXPECT_EQ(nccl_dtype(TANDEM_FLOAT32), ncclFloat32);
  EXPECT_EQ(nccl_dtype(TANDEM_FLOAT16), ncclFloat16);
  EXPECT_EQ(nccl_dtype(TANDEM_BFLOAT16), ncclBfloat16);
  EXPECT_EQ(nccl_dtype(TANDEM_INT64), ncclInt64);
  EXPECT_EQ(nccl_dtype(TANDEM_BOOL), ncclUint8);
  EXPECT_THROW(nccl_dtype(static_cast<tandem_dtype_t>(42)), InvalidArgument);
  EXPECT_EQ(element_bytes(TANDEM_BFLOAT16), 2u);
  EXPECT_EQ(element_bytes(TANDEM_INT64), 8u);
  EXPECT_EQ(element_bytes(TANDEM_BOOL), 1u);
}

TEST(NcclTypes, Reductions) {
  auto r = nccl_reduction(TANDEM_FLOAT32, TANDEM_SUM, 1.0, 1.0, 4);
  EXPECT_EQ(r.op, ncclSum);
  EXPECT_FALSE(r.premul_sum);
  r = nccl_reduction(TANDEM_FLOAT32, TANDEM_AVERAGE, 1.0, 1.0, 4);
  EXPECT_EQ(r.op, ncclAvg);
  r = nccl_reduction(TANDEM_FLOAT64, TANDEM_SUM, 0.5, 3.0, 4);
  EXPECT_TRUE(r.premul_sum);
  EXPECT_DOUBLE_EQ(r.factor, 1.5);
  r = nccl_reduction(TANDEM_FLOAT32, TANDEM_AVERAGE, 2.0, 1.0, 4);
  EXPECT_TRUE(r.premul_sum);
  EXPECT_DOUBLE_EQ(r.factor, 0.5) << "average folds 1/nranks into the factor";
  EXPECT_EQ(nccl_reduction(TANDEM_BOOL, TANDEM_SUM, 1, 1, 2).op, ncclMax);
  EXPECT_EQ(nccl_reduction(TANDEM_BOOL, TANDEM_PRODUCT, 1, 1, 2).op, ncclMin);
  EXPECT_EQ(nccl_reduction(TANDEM_INT32, TANDEM_PRODUCT, 1, 1, 2).op, ncclProd);
  EXPECT_THROW(nccl_reduction(TANDEM_INT32, TANDEM_SUM, 2.0, 1.0, 2), InvalidArgument);
  EXPECT_THROW(nccl_reduction(TANDEM_FLOAT32, TANDEM_MAX, 2.0, 1.0, 2), UnsupportedError);
  EXPECT_THROW(nccl_reduction(TANDEM_FLOAT32, static_cast<tandem_op_t>(9), 1, 1, 2),
               InvalidArgument);
}

TEST(NcclTypes, HalfAndBfloat16Scalars) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half_bits(0.5f), 0x3800);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half_bits(1e6f), 0x7c00);
  EXPECT_EQ(float_to_half_bits(5.9604645e-08f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half_bits(1.0f + 1.0f / 2048), 0x3c00) << "tie rounds to even";
  EXPECT_EQ(float_to_bfloat16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16_bits(0.25f), 0x3e80);
  const auto s = scalar_bits(0.25, TANDEM_FLOAT32);
  float f;
  std::memcpy(&f, s.data(), 4);
  EXPECT_EQ(f, 0.25f);
}

}  // namespace
}  // namespace gpu
}  // namespace tandem
