// Host launchers for the N-d pools (PoolND, MaxPoolWithIndices), RoiAlign,
// GridSample and AffineGrid on the GPU: one thread per output element, walking the window
// or the sampling taps as the CPU kernels do (kernels/cpu/pool_nd.cc,
// kernels/cpu/grid_sample.cc), in double.
//
//   PoolGeometry g = ...;  // spatial sizes, window, strides, pads, mode
//   RETURN_IF_ERROR(LaunchPool(dtype, g, x, y, /*indices=*/nullptr, s));
//   RETURN_IF_ERROR(LaunchGridSample(dtype, grid_geometry, x, grid, y, s));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_POOL_GRID_H_
#define SLUICE_KERNELS_CUDA_POOL_GRID_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"
#include "kernels/grid_math.h"

namespace sluice::cuda {

// The spatial dims of a window op on [N, C, spatial...]: at most this many.
inline constexpr int kMaxSpatialDims = kMaxGpuDims - 2;

// PoolMode (kernels/vision_params.h) as a number.
enum class GpuPoolMode : int { kMax, kAvg, kLp };
struct PoolGeometry {
  GpuPoolMode mode = GpuPoolMode::kMax;
  int n = 0;              // spatial dims
  int64_t planes = 0;     // N * C
  int64_t in[kMaxSpatialDims] = {}, out[kMaxSpatialDims] = {};
  int64_t kernel[kMaxSpatialDims] = {}, strides[kMaxSpatialDims] = {};
  int64_t dilations[kMaxSpatialDims] = {};
  int64_t pad_begin[kMaxSpatialDims] = {}, pad_end[kMaxSpatialDims] = {};
  bool include_pad = false;
  int64_t p = 2;              // Lp
  int64_t storage_order = 0;  // indices: 1 for column-major spatial dims
};

// Floats, int32, int64, int8 and uint8 (the CPU's pool dtypes).
bool HasPoolKernel(GpuDtype dtype);
// y [N, C, out...] from x [N, C, in...]; `indices` (may be null) gets each
// maximum's flat input index.
absl::Status LaunchPool(GpuDtype dtype, const PoolGeometry& g, const void* x,
                        void* y, int64_t* indices, cudaStream_t stream);

// GridSampleAttrs (kernels/vision_params.h) and the sizes.
struct GridSampleGeometry {
  GridInterp interp = GridInterp::kLinear;
  GridPadding padding = GridPadding::kZeros;
  bool align_corners = false;
  int r = 0;  // spatial dims
  int64_t batch = 0, channels = 0;
  int64_t in[kMaxSpatialDims] = {};
  int64_t out_plane = 0;  // output points per (n, c)
};

// The four floats.
bool HasGridSampleKernel(GpuDtype dtype);
// y [N, C, out...] sampled from x [N, C, in...] at grid [N, out..., r].
absl::Status LaunchGridSample(GpuDtype dtype, const GridSampleGeometry& g,
                              const void* x, const void* grid, void* y,
                              cudaStream_t stream);

// AffineGrid: y [N, D1.., r] = theta [N, r, r + 1] times each point's
// normalised (x, y[, z], 1); `dims` the r spatial sizes (r 2 or 3). Floats.
absl::Status LaunchAffineGrid(GpuDtype dtype, const void* theta, void* y,
                              int64_t batch, int r, const int64_t* dims,
                              bool align_corners, cudaStream_t stream);

// RoiAlign (RoiAlignAttrs, kernels/vision_params.h, as plain values).
struct RoiAlignGeometry {
  bool half_pixel = true, max = false;
  int64_t out_h = 1, out_w = 1, sampling_ratio = 0;
  double spatial_scale = 1;
  int64_t rois = 0, channels = 0, h = 0, w = 0;
};
// y [R, C, out_h, out_w] from x [N, C, H, W], rois [R, 4] (x's dtype) and
// `batch` (device memory, R checked indices). Floats.
absl::Status LaunchRoiAlign(GpuDtype dtype, const RoiAlignGeometry& g,
                            const void* x, const void* rois,
                            const int64_t* batch, void* y,
                            cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_POOL_GRID_H_
