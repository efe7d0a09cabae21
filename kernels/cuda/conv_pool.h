// Host launchers for NCHW or NHWC Conv2D, MaxPool and AvgPool on CUDA
// (Conv2D float32; one thread per output element, direct summation). GlobalAvgPool is a
// reduction (reduce.h).
//
//   ConvGeometry g = ...;   // sizes, strides, pads, dilations, group
//   RETURN_IF_ERROR(LaunchConv2D(g, input, filter, output, stream));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_CONV_POOL_H_
#define SLUICE_KERNELS_CUDA_CONV_POOL_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

struct ConvGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0;   // input
  int64_t o = 0, oh = 0, ow = 0;        // output channels and size
  int64_t kh = 0, kw = 0;               // window
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t group = 1;                    // Conv2D only
  // NHWC: input [n, h, w, c], output [n, oh, ow, o], filter [o, kh, kw,
  // c / group] (graph/data_format.h).
  bool channels_last = false;
};

// filter is [o, c / group, kh, kw]; output [n, o, oh, ow] (NCHW; the NHWC
// forms with channels_last).
absl::Status LaunchConv2D(const ConvGeometry& g, const float* input,
                          const float* filter, float* output,
                          cudaStream_t stream);
// output [n, c, oh, ow] (or [n, oh, ow, c]). AvgPool divides by the window elements inside the
// input, or by kh*kw when count_include_pad.
// float32, float64, float16 and bfloat16 (`dtype`), accumulated in float
// (double for float64).
absl::Status LaunchMaxPool(const ConvGeometry& g, GpuDtype dtype,
                           const void* input, void* output,
                           cudaStream_t stream);
absl::Status LaunchAvgPool(const ConvGeometry& g, bool count_include_pad,
                           GpuDtype dtype, const void* input, void* output,
                           cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_CONV_POOL_H_
