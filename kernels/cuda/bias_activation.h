// Host launchers for a product's epilogue on CUDA: y = act(y + bias
// (+ side)) in place, over an NCHW output with one bias per channel, as
// FusedConv2D applies it after the convolution, or over a row-major
// [rows, cols] matrix with one bias per column, as FusedMatMul applies it
// when cuBLASLt's epilogue is not used. float32, float16, bfloat16
// (computed in float) and float64.
//
//   // y [n, c, spatial], bias [c], side null or y's shape.
//   RETURN_IF_ERROR(LaunchBiasActivation(GpuDtype::kFloat, y, bias, side,
//                                        n * c, c, spatial, /*relu=*/true, s));
//   // y [rows, cols], bias [cols].
//   RETURN_IF_ERROR(LaunchRowBiasActivation(GpuDtype::kHalf, y, bias, side,
//                                           rows, cols,
//                                           RowActivation::kGeluTanh, s));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_BIAS_ACTIVATION_H_
#define SLUICE_KERNELS_CUDA_BIAS_ACTIVATION_H_

#include <cmath>
#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

// y holds `planes` planes of `spatial` elements; plane p has channel
// p % channels. side may be null. With relu, v = min(max(v, 0), relu_max)
// (relu_max 6 for ReLU6).
absl::Status LaunchBiasActivation(GpuDtype dtype, void* y, const void* bias,
                                  const void* side, int64_t planes,
                                  int64_t channels, int64_t spatial, bool relu,
                                  cudaStream_t stream,
                                  float relu_max = INFINITY);

// kRelu6: min(max(v, 0), 6).
enum class RowActivation { kNone, kRelu, kGeluTanh, kRelu6 };

// y holds `rows` rows of `cols` elements; element (r, c) gets bias[c] and
// side[r * cols + c] (side may be null), then the activation (kGeluTanh:
// 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3)))).
absl::Status LaunchRowBiasActivation(GpuDtype dtype, void* y, const void* bias,
                                     const void* side, int64_t rows,
                                     int64_t cols, RowActivation activation,
                                     cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_BIAS_ACTIVATION_H_
