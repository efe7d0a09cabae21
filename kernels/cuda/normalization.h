// Host launchers for Softmax, LayerNorm and RMSNorm on CUDA: one thread block per
// row, with block-wide max / sum reductions in shared memory. float32,
// float16, bfloat16 (computed in float) and float64.
//
//   // x viewed as [outer, axis_len, inner]; softmax along the middle.
//   RETURN_IF_ERROR(LaunchSoftmax(GpuDtype::kFloat, x, y, outer, len, inner, s));
//   RETURN_IF_ERROR(LaunchLayerNorm(GpuDtype::kHalf, x, scale, bias, y,
//                                   rows, cols, 1e-5f, s));
//   RETURN_IF_ERROR(LaunchRMSNorm(GpuDtype::kBFloat16, x, scale, y, rows,
//                                 cols, 1e-6f, s));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_NORMALIZATION_H_
#define SLUICE_KERNELS_CUDA_NORMALIZATION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

absl::Status LaunchSoftmax(GpuDtype dtype, const void* x, void* y,
                           int64_t outer, int64_t axis_len, int64_t inner,
                           cudaStream_t stream);
// x and y are [rows, cols]; scale and bias have cols elements.
absl::Status LaunchLayerNorm(GpuDtype dtype, const void* x, const void* scale,
                             const void* bias, void* y, int64_t rows,
                             int64_t cols, float epsilon, cudaStream_t stream);
// x and y are [rows, cols]; scale has cols elements. No allocation and no
// synchronisation: capturable in a CUDA graph.
absl::Status LaunchRMSNorm(GpuDtype dtype, const void* x, const void* scale,
                           void* y, int64_t rows, int64_t cols, float epsilon,
                           cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_NORMALIZATION_H_
