// Host launchers for the elementwise CUDA kernels: unary math and
// activations, binary arithmetic and comparisons with NumPy broadcasting,
// and Where (Cast: kernels/cuda/cast.h). All enqueue on `stream` and return
// the launch status (errors from the kernel itself surface at the next
// synchronisation).
// Each op computes what its CPU kernel (kernels/cpu/elementwise_*.cc)
// computes, in float for the 16-bit floats.
//
//   RETURN_IF_ERROR(LaunchUnary(UnaryOp::kRelu, GpuDtype::kFloat, x, y, n, s));
//   RETURN_IF_ERROR(LaunchUnary(UnaryOp::kElu, GpuDtype::kHalf, x, y, n, s,
//                               {.alpha = 1.0f}));
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
  kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kAsinh, kAcosh,
  kAtanh, kFloor, kCeil, kRound, kSign, kSoftplus, kSoftsign, kMish,
  kHardSwish,
  kHardSigmoid, kElu, kSelu, kCelu, kThresholdedRelu,  // read UnaryParams
};
enum class BinaryOp {
  kAdd, kSub, kMul, kDiv, kPow, kMod, kFMod, kMaximum, kMinimum,
  kEqual, kLess, kGreater,  // output bool
};

// The float attributes of the parameterised activations: alpha for
// HardSigmoid, Elu, Selu, Celu, ThresholdedRelu; beta is HardSigmoid's beta
// and Selu's gamma.
struct UnaryParams {
  float alpha = 0;
  float beta = 0;
};

// Whether a kernel exists for (op, dtype): floats for every op; int32 and
// int64 for Neg, Abs, Relu and Sign; for the binary ops, every integer
// dtype from int8 to uint64 for every op, bool only for Equal.
bool HasUnaryKernel(UnaryOp op, GpuDtype dtype);
bool HasBinaryKernel(BinaryOp op, GpuDtype dtype);

absl::Status LaunchUnary(UnaryOp op, GpuDtype dtype, const void* x, void* y,
                         int64_t n, cudaStream_t stream,
                         UnaryParams params = {});
// `map` spans the output (written row-major); strides[0] are a's, strides[1]
// b's. `contiguous`: a, b and the output have the same shape, so only
// map.num_elements is read.
absl::Status LaunchBinary(BinaryOp op, GpuDtype dtype, const void* a,
                          const void* b, void* out, const IndexMap& map,
                          bool contiguous, cudaStream_t stream);
// Integer Div, Mod and FMod reject a zero divisor and signed integer Pow a
// negative exponent, as the CPU kernels do: whether (op, dtype) needs that
// check, and the check itself, which stores the lowest such position of
// b[0, n) in *bad_position (device memory; UINT64_MAX when there is none,
// which the launcher writes first).
bool NeedsOperandCheck(BinaryOp op, GpuDtype dtype);
absl::Status LaunchOperandCheck(BinaryOp op, GpuDtype dtype, const void* b,
                                int64_t n, unsigned long long* bad_position,
                                cudaStream_t stream);
// out = cond ? x : y with broadcasting; map.strides[0..2] are cond's, x's
// and y's; the output is row-major over map.dims.
absl::Status LaunchWhere(int element_bytes, const bool* cond, const void* x,
                         const void* y, void* out, const IndexMap& map,
                         cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_ELEMENTWISE_H_
