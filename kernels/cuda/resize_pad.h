// Host launchers for Resize and Pad on the GPU. The OpKernels
// (vision_kernels.cc) read the runtime parameters (scales, sizes, roi,
// pads, value, axes) on the host, work out the output shape with the CPU
// kernels' functions (graph/vision_shapes.h), and pass the geometry here
// as plain structs.
//
//   // Resize: x -> double, one pass per resized axis, double -> y
//   RETURN_IF_ERROR(LaunchToDouble(dtype, x, buf0, n, s));
//   RETURN_IF_ERROR(LaunchResizeAxis(params, axis, buf0, buf1, s));
//   RETURN_IF_ERROR(LaunchFromDouble(dtype, buf1, y, m, s));
//   RETURN_IF_ERROR(LaunchPad(4, pad_geometry, x, fill_bits, y, s));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_RESIZE_PAD_H_
#define SLUICE_KERNELS_CUDA_RESIZE_PAD_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

// ResizeAttrs (kernels/vision_params.h) as numbers.
enum class ResizeMode : int { kNearest, kLinear, kCubic };
enum class ResizeTransform : int {
  kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners,
  kAsymmetric, kTfCropAndResize
};
enum class NearestMode : int { kRoundPreferFloor, kRoundPreferCeil, kFloor,
                               kCeil };
struct ResizeParams {
  ResizeMode mode = ResizeMode::kNearest;
  ResizeTransform transform = ResizeTransform::kHalfPixel;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false, antialias = false;
  double extrapolation = 0;
};
// One pass: [outer, in_len, inner] -> [outer, out_len, inner].
struct ResizeAxisGeometry {
  int64_t outer = 1, in_len = 1, out_len = 1, inner = 1;
  double scale = 1, roi_start = 0, roi_end = 1;
};

// Floats, int32 and int64 (the CPU's arithmetic dtypes).
bool HasResizeKernel(GpuDtype dtype);
// y[i] = double(x[i]), as the CPU's ToDouble.
absl::Status LaunchToDouble(GpuDtype dtype, const void* x, double* y,
                            int64_t n, cudaStream_t stream);
// y[i] = x[i] rounded to dtype (integers: to nearest, ties to even).
absl::Status LaunchFromDouble(GpuDtype dtype, const double* x, void* y,
                              int64_t n, cudaStream_t stream);
// One resize pass along an axis, in double, with the CPU's taps and
// weights (kernels/cpu/resize.cc), computed per output element.
absl::Status LaunchResizeAxis(const ResizeParams& p,
                              const ResizeAxisGeometry& g, const double* in,
                              double* out, cudaStream_t stream);

// PadMode (kernels/vision_params.h) as a number.
enum class GpuPadMode : int { kConstant, kReflect, kEdge, kWrap };
struct PadGeometry {
  GpuPadMode mode = GpuPadMode::kConstant;
  int rank = 0;
  int64_t out_dims[kMaxGpuDims] = {};
  int64_t in_strides[kMaxGpuDims] = {};  // of the uncropped input
  int64_t begin[kMaxGpuDims] = {};       // positive begin pad
  int64_t lo[kMaxGpuDims] = {};          // first input index kept
  int64_t len[kMaxGpuDims] = {};         // input length kept
  int64_t total = 0;                     // output elements
};
// Any dtype, by element size (1, 2, 4 or 8 bytes); `fill` holds the
// constant's bytes (little-endian, in its low element_bytes).
absl::Status LaunchPad(int element_bytes, const PadGeometry& g, const void* x,
                       uint64_t fill, void* y, cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_RESIZE_PAD_H_
