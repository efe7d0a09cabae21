// Host launchers for ConvND, ConvTranspose and Col2Im on the GPU: direct
// summation, one thread per output element, over any number of spatial dims
// up to kMaxSpatialDims. The convolutions take float32, float16, bfloat16
// and float64 (they are the fallback of the cuDNN path, cudnn_conv.h);
// Col2Im float32, as on the CPU.
//
//   WindowGeometry g = ...;  // image and window-position sizes, window
//   RETURN_IF_ERROR(LaunchConvNd(GpuDtype::kFloat, g, x, filter, y, stream));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_CONV_ND_H_
#define SLUICE_KERNELS_CUDA_CONV_ND_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"
#include "kernels/cuda/pool_grid.h"

namespace sluice::cuda {

// A sliding window over an image (kernels/cpu/window_nd.h's WindowNd):
// window position o reads image[o * stride - pad + k * dilation].
struct WindowGeometry {
  int n = 0;                 // spatial dims
  int64_t batch = 0;
  int64_t image[kMaxSpatialDims] = {};      // image sizes
  int64_t positions[kMaxSpatialDims] = {};  // window positions per dim
  int64_t kernel[kMaxSpatialDims] = {}, strides[kMaxSpatialDims] = {};
  int64_t dilations[kMaxSpatialDims] = {}, pad_begin[kMaxSpatialDims] = {};
  int64_t group = 1;
  // ConvND: x [batch, in_channels, image...], filter [out_channels,
  // in_channels / group, kernel...], y [batch, out_channels, positions...].
  // ConvTranspose: x [batch, in_channels, positions...], filter
  // [in_channels, out_channels / group, kernel...], y [batch, out_channels,
  // image...]. Col2Im: x [batch, out_channels * prod(kernel), prod(positions)],
  // y [batch, out_channels, image...].
  int64_t in_channels = 0, out_channels = 0;
};

// x, filter and y are of `dtype`; UNIMPLEMENTED for other dtypes.
absl::Status LaunchConvNd(GpuDtype dtype, const WindowGeometry& g,
                          const void* x, const void* filter, void* y,
                          cudaStream_t stream);
absl::Status LaunchConvTransposeNd(GpuDtype dtype, const WindowGeometry& g,
                                   const void* x, const void* filter, void* y,
                                   cudaStream_t stream);
absl::Status LaunchCol2ImNd(const WindowGeometry& g, const float* x, float* y,
                            cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_CONV_ND_H_
