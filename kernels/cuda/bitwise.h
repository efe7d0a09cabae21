// Host launchers for the CUDA bitwise kernels: BitwiseAnd / Or / Xor and
// BitShift with NumPy broadcasting, BitwiseNot, and BitCast's bool
// destination. Integer dtypes int8 to uint64; each computes what
// kernels/cpu/bitwise.cc computes (a shift by the amount's bits read as
// unsigned, so a negative amount or one of the type's width or more shifts
// every bit out, or fills with the sign bit shifting a negative value
// right). All enqueue on `stream` and return the launch status.
//
//   RETURN_IF_ERROR(LaunchBitBinary(BitOp::kXor, GpuDtype::kUInt8, a, b, z,
//                                   map, /*contiguous=*/false, stream));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_BITWISE_H_
#define SLUICE_KERNELS_CUDA_BITWISE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

enum class BitOp { kAnd, kOr, kXor, kShiftLeft, kShiftRight };

// Whether `dtype` is one of the integer dtypes these kernels take.
bool IsBitwiseDtype(GpuDtype dtype);

// out = op(a, b); `map` spans the output, strides[0] are a's, strides[1]
// b's; `contiguous`: same shapes, only map.num_elements is read.
absl::Status LaunchBitBinary(BitOp op, GpuDtype dtype, const void* a,
                             const void* b, void* out, const IndexMap& map,
                             bool contiguous, cudaStream_t stream);
// y = ~x over n elements.
absl::Status LaunchBitwiseNot(GpuDtype dtype, const void* x, void* y,
                              int64_t n, cudaStream_t stream);
// y[i] = x[i] != 0 for n bytes: BitCast of a one-byte dtype to bool, which
// holds only 0 and 1.
absl::Status LaunchBytesToBool(const uint8_t* x, bool* y, int64_t n,
                               cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_BITWISE_H_
