// Host launchers for the elementwise CUDA kernels: unary math, binary
// arithmetic and comparisons with NumPy broadcasting, Cast, and Where. All
// enqueue on `stream` and return the launch status (errors from the kernel
// itself surface at the next synchronisation).
//
//   RETURN_IF_ERROR(LaunchUnary(UnaryOp::kRelu, GpuDtype::kFloat, x, y, n, s));
//   RETURN_IF_ERROR(LaunchBinary(BinaryOp::kAdd, GpuDtype::kHalf, a, b, z,
//                                map, s));   // map: out dims, a/b strides
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_ELEMENTWISE_H_
#define SLUICE_KERNELS_CUDA_ELEMENTWISE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

enum class UnaryOp {
  kNeg, kAbs, kRelu, kExp, kLog, kSqrt, kRsqrt, kTanh, kSigmoid, kErf,
  kGeluErf, kGeluTanh,
};
enum class BinaryOp {
  kAdd, kSub, kMul, kDiv, kPow, kMaximum, kMinimum,
  kEqual, kLess, kGreater,  // output bool
};

// Whether a kernel exists for (op, dtype): floats for every op; int32 and
// int64 for Neg, Abs, Relu; Add, Sub, Mul, Maximum, Minimum and the
// comparisons; bool for Equal.
bool HasUnaryKernel(UnaryOp op, GpuDtype dtype);
bool HasBinaryKernel(BinaryOp op, GpuDtype dtype);

absl::Status LaunchUnary(UnaryOp op, GpuDtype dtype, const void* x, void* y,
                         int64_t n, cudaStream_t stream);
// `map` spans the output (written row-major); strides[0] are a's, strides[1]
// b's. `contiguous`: a, b and the output have the same shape, so only
// map.num_elements is read.
absl::Status LaunchBinary(BinaryOp op, GpuDtype dtype, const void* a,
                          const void* b, void* out, const IndexMap& map,
                          bool contiguous, cudaStream_t stream);
// Any of float32, float16, bfloat16, float64, int32, int64, int8, uint8,
// bool to any other.
absl::Status LaunchCast(GpuDtype src, GpuDtype dst, const void* x, void* y,
                        int64_t n, cudaStream_t stream);
// out = cond ? x : y with broadcasting; map.strides[0..2] are cond's, x's
// and y's; the output is row-major over map.dims.
absl::Status LaunchWhere(int element_bytes, const bool* cond, const void* x,
                         const void* y, void* out, const IndexMap& map,
                         cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_ELEMENTWISE_H_
