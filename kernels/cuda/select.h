// Host launchers for the selection ops on the GPU: TopK (each element's
// rank in its line, found by comparing with the whole line: O(n^2) per line,
// no scratch memory), OneHot and EyeLike. Scalar parameters (k, depth, the
// off and on values) are read on the host by the OpKernels and passed here.
//
//   // x viewed as [outer, n, inner]; values and indices [outer, k, inner]
//   RETURN_IF_ERROR(LaunchTopK(GpuDtype::kFloat, x, vals, idx, outer, n,
//                              inner, k, /*largest=*/true, s));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_SELECT_H_
#define SLUICE_KERNELS_CUDA_SELECT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

// The ordered dtypes: floats and integers (not bool).
bool HasTopKKernel(GpuDtype dtype);

// The k largest (or smallest) elements of each line along n, sorted, with
// their int64 positions; NaN counts as the largest value and equal values
// keep index order (the CPU kernel's order).
absl::Status LaunchTopK(GpuDtype dtype, const void* x, void* values,
                        int64_t* indices, int64_t outer, int64_t n,
                        int64_t inner, int64_t k, bool largest,
                        cudaStream_t stream);

// out [outer, depth, inner] (element_bytes each): on_bits where the index
// of [outer, inner] (negative ones counting from depth; floats truncated
// toward zero) names the slot, off_bits elsewhere. Indices outside
// [-depth, depth), and non-finite float ones, name no slot.
bool HasOneHotIndices(GpuDtype dtype);
absl::Status LaunchOneHot(GpuDtype index_dtype, const void* indices,
                          int element_bytes, uint64_t off_bits,
                          uint64_t on_bits, void* out, int64_t outer,
                          int64_t depth, int64_t inner, cudaStream_t stream);

// out [rows, cols] of `dtype`: 1 on the k-th diagonal, 0 elsewhere.
absl::Status LaunchEyeLike(GpuDtype dtype, void* out, int64_t rows,
                           int64_t cols, int64_t k, cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_SELECT_H_
