// Host launcher for a convolution's epilogue on CUDA: y = act(y + bias[c]
// (+ side)) in place over an NCHW output, as FusedConv2D applies it after
// the convolution. float32, float16, bfloat16 (computed in float) and
// float64.
//
//   // y [n, c, spatial], bias [c], side null or y's shape.
//   RETURN_IF_ERROR(LaunchBiasActivation(GpuDtype::kFloat, y, bias, side,
//                                        n * c, c, spatial, /*relu=*/true, s));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_BIAS_ACTIVATION_H_
#define SLUICE_KERNELS_CUDA_BIAS_ACTIVATION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

// y holds `planes` planes of `spatial` elements; plane p has channel
// p % channels. side may be null.
absl::Status LaunchBiasActivation(GpuDtype dtype, void* y, const void* bias,
                                  const void* side, int64_t planes,
                                  int64_t channels, int64_t spatial, bool relu,
                                  cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_BIAS_ACTIVATION_H_
