// Host launchers for Trilu, CumSum and CumProd on the GPU. Their scalar
// parameters (Trilu's diagonal k, the cumulative ops' axis) are read on the host by the OpKernels
// and passed here as plain numbers.
//
//   // x: `total` elements, innermost matrices [rows, cols]
//   RETURN_IF_ERROR(LaunchTrilu(4, x, y, total, rows, cols, k, upper, s));
//   // x viewed as [outer, n, inner], summed along n
//   RETURN_IF_ERROR(LaunchCumSum(GpuDtype::kFloat, x, y, outer, n, inner,
//                                exclusive, reverse, s));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_TRILU_CUMSUM_H_
#define SLUICE_KERNELS_CUDA_TRILU_CUMSUM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

// y = x with each matrix's elements below (upper) or above (!upper) the
// k-th diagonal set to zero bits (0, 0.0 or false). Any dtype, by element
// size (1, 2, 4 or 8 bytes).
absl::Status LaunchTrilu(int element_bytes, const void* x, void* y,
                         int64_t total, int64_t rows, int64_t cols, int64_t k,
                         bool upper, cudaStream_t stream);

// Floats, int32 and int64 (sums and products in float for the 16-bit
// floats, wrapping for the integers, as on the CPU), for both CumSum and
// CumProd.
bool HasCumSumKernel(GpuDtype dtype);

// Running sums along n, one thread per line; exclusive leaves out the
// element itself, reverse sums from the end.
absl::Status LaunchCumSum(GpuDtype dtype, const void* x, void* y,
                          int64_t outer, int64_t n, int64_t inner,
                          bool exclusive, bool reverse, cudaStream_t stream);

// Running products, likewise (1 before the first element when exclusive).
absl::Status LaunchCumProd(GpuDtype dtype, const void* x, void* y,
                           int64_t outer, int64_t n, int64_t inner,
                           bool exclusive, bool reverse, cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_TRILU_CUMSUM_H_
