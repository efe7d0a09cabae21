// PoolND / MaxPoolWithIndices and GridSample: one thread per output
// element, in double, as kernels/cpu/pool_nd.cc and grid_sample.cc.
#include <math_constants.h>

#include <type_traits>

#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/pool_grid.h"

namespace sluice::cuda {
namespace {

// As the CPU's FromDouble: integers truncate.
template <typename T>
__device__ __forceinline__ T FromDouble(double v) {
  if constexpr (std::is_integral_v<T> || std::is_same_v<T, double>) {
    return static_cast<T>(v);
  } else {
    return FromWide<T>(static_cast<float>(v));
  }
}

template <typename T>
static __global__ void PoolKernel(PoolGeometry g, const T* x, T* y,
                                  int64_t* indices) {
  const int n = g.n;
  int64_t in_plane = 1, out_plane = 1, ksize = 1;
  for (int d = 0; d < n; ++d) {
    in_plane *= g.in[d];
    out_plane *= g.out[d];
    ksize *= g.kernel[d];
  }
  const int64_t total = g.planes * out_plane;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t plane_index = e / out_plane;
    const T* plane = x + plane_index * in_plane;
    int64_t o[kMaxSpatialDims];
    int64_t rem = e % out_plane;
    for (int d = n - 1; d >= 0; --d) {
      o[d] = rem % g.out[d];
      rem /= g.out[d];
    }
    double acc = g.mode == GpuPoolMode::kMax ? -CUDART_INF : 0.0;
    int64_t best = -1, cells = 0, padded_cells = 0;
    for (int64_t t = 0; t < ksize; ++t) {
      int64_t off = 0, col_off = 0, in_stride = 1, col_stride = 1;
      int64_t at[kMaxSpatialDims];  // the input position, per dim
      bool inside = true, in_padded = true;
      int64_t krem = t;
      for (int d = n - 1; d >= 0; --d) {
        const int64_t k = krem % g.kernel[d];
        krem /= g.kernel[d];
        const int64_t c = o[d] * g.strides[d] - g.pad_begin[d] +
                          k * g.dilations[d];
        at[d] = c;
        if (c < -g.pad_begin[d] || c >= g.in[d] + g.pad_end[d]) {
          in_padded = false;
        }
        if (c < 0 || c >= g.in[d]) inside = false;
        off += c * in_stride;
        in_stride *= g.in[d];
      }
      if (g.storage_order == 1) {
        for (int d = 0; d < n; ++d) {
          col_off += at[d] * col_stride;
          col_stride *= g.in[d];
        }
      }
      if (in_padded) ++padded_cells;
      if (!inside) continue;
      ++cells;
      const double v = ToDouble(plane[off]);
      if (g.mode == GpuPoolMode::kMax) {
        if (best < 0 || v > acc || (isnan(v) && !isnan(acc))) {
          acc = v;
          best = g.storage_order == 1 ? col_off : off;
        }
      } else if (g.mode == GpuPoolMode::kAvg) {
        acc += v;
      } else {
        acc += pow(fabs(v), static_cast<double>(g.p));
      }
    }
    if (g.mode == GpuPoolMode::kAvg) {
      const int64_t div = g.include_pad ? padded_cells : cells;
      acc = div > 0 ? acc / static_cast<double>(div) : 0.0;
    } else if (g.mode == GpuPoolMode::kLp) {
      acc = pow(acc, 1.0 / static_cast<double>(g.p));
    }
    y[e] = FromDouble<T>(acc);
    if (indices != nullptr) {
      indices[e] = plane_index * in_plane + (best > 0 ? best : 0);
    }
  }
}

template <typename T>
static __global__ void GridSampleKernel(GridSampleGeometry g, const T* x,
                                        const T* grid, T* y) {
  const int r = g.r;
  int64_t in_plane = 1;
  int64_t in_strides[kMaxSpatialDims];
  for (int d = r - 1; d >= 0; --d) {
    in_strides[d] = in_plane;
    in_plane *= g.in[d];
  }
  const int64_t total = g.batch * g.channels * g.out_plane;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t p = e % g.out_plane;
    const int64_t nc = e / g.out_plane;
    const int64_t n = nc / g.channels;
    const T* coords = grid + (n * g.out_plane + p) * r;
    GridAxisTaps taps[kMaxSpatialDims];
    for (int d = 0; d < r; ++d) {
      MakeGridAxisTaps(g.interp, g.padding, g.align_corners, g.in[d],
                       ToDouble(coords[r - 1 - d]), &taps[d]);
    }
    const T* plane = x + nc * in_plane;
    int pick[kMaxSpatialDims];
    const double acc =
        GridSampleSum(taps, r, in_strides, pick,
                      [plane](int64_t off) { return ToDouble(plane[off]); });
    y[e] = FromDouble<T>(acc);
  }
}

struct AffineDims {
  int64_t d[3];
};

template <typename T>
static __global__ void AffineGridKernel(const T* theta, T* y, int64_t batch,
                                        int r, AffineDims dims,
                                        bool align_corners) {
  int64_t points = 1;
  for (int d = 0; d < r; ++d) points *= dims.d[d];
  const int64_t total = batch * points * r;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = e % r;
    const int64_t p = (e / r) % points;
    const int64_t n = e / (r * points);
    // homo = (x, y[, z], 1): x along the last dim.
    double homo[4];
    int64_t rest = p;
    for (int d = r - 1; d >= 0; --d) {
      const int64_t len = dims.d[d];
      homo[r - 1 - d] = GridCoord(rest % len, len, align_corners);
      rest /= len;
    }
    homo[r] = 1.0;
    double acc = 0;
    for (int j = 0; j <= r; ++j) {
      acc += ToDouble(theta[(n * r + i) * (r + 1) + j]) * homo[j];
    }
    y[e] = FromDouble<T>(acc);
  }
}

// std::max(a, b).
__device__ __forceinline__ double StdMax(double a, double b) {
  return a < b ? b : a;
}

template <typename T>
static __global__ void RoiAlignKernel(RoiAlignGeometry g, const T* x,
                                      const T* rois, const int64_t* batch,
                                      T* y) {
  const int64_t bins = g.out_h * g.out_w;
  const int64_t total = g.rois * g.channels * bins;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t b = e % bins;
    const int64_t c = (e / bins) % g.channels;
    const int64_t n = e / (bins * g.channels);
    const double box[4] = {ToDouble(rois[n * 4 + 0]), ToDouble(rois[n * 4 + 1]),
                           ToDouble(rois[n * 4 + 2]), ToDouble(rois[n * 4 + 3])};
    const RoiBins roi = RoiBinsFor(box, g.spatial_scale, g.half_pixel,
                                    g.sampling_ratio, g.out_h, g.out_w);
    const double y0 = roi.y0, x0 = roi.x0, bh = roi.bh, bw = roi.bw;
    const int64_t gh = roi.gh, gw = roi.gw;
    const double count = roi.count;
    const int64_t ph = b / g.out_w, pw = b % g.out_w;
    const T* plane = x + (batch[n] * g.channels + c) * g.h * g.w;
    double acc = 0;
    bool first = true;
    for (int64_t iy = 0; iy < gh; ++iy) {
      const double yy = y0 + ph * bh + (iy + 0.5) * bh / gh;
      for (int64_t ix = 0; ix < gw; ++ix) {
        const double xx = x0 + pw * bw + (ix + 0.5) * bw / gw;
        const RoiSample sm = RoiBilinear(yy, xx, g.h, g.w);
        if (g.max) {
          double v = sm.w[0] * ToDouble(plane[sm.off[0]]);
          for (int k = 1; k < 4; ++k) {
            v = StdMax(v, sm.w[k] * ToDouble(plane[sm.off[k]]));
          }
          acc = first ? v : StdMax(acc, v);
        } else {
          for (int k = 0; k < 4; ++k) {
            acc += sm.w[k] * ToDouble(plane[sm.off[k]]);
          }
        }
        first = false;
      }
    }
    if (!g.max) acc /= count;
    y[e] = FromDouble<T>(acc);
  }
}

}  // namespace

absl::Status LaunchRoiAlign(GpuDtype dtype, const RoiAlignGeometry& g,
                            const void* x, const void* rois,
                            const int64_t* batch, void* y,
                            cudaStream_t stream) {
  const int64_t total = g.rois * g.channels * g.out_h * g.out_w;
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      found = true;
      if (total == 0) return;
      RoiAlignKernel<T><<<GridFor(total), kThreads, 0, stream>>>(
          g, static_cast<const T*>(x), static_cast<const T*>(rois), batch,
          static_cast<T*>(y));
    }
  });
  if (!found) {
    return absl::UnimplementedError(
        absl::StrCat("no CUDA RoiAlign for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus("RoiAlign");
}

absl::Status LaunchAffineGrid(GpuDtype dtype, const void* theta, void* y,
                              int64_t batch, int r, const int64_t* dims,
                              bool align_corners, cudaStream_t stream) {
  if (r != 2 && r != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("AffineGrid: ", r, " spatial dims, not 2 or 3"));
  }
  AffineDims d = {};
  int64_t total = batch * r;
  for (int i = 0; i < r; ++i) {
    d.d[i] = dims[i];
    total *= dims[i];
  }
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      found = true;
      if (total == 0) return;
      AffineGridKernel<T><<<GridFor(total), kThreads, 0, stream>>>(
          static_cast<const T*>(theta), static_cast<T*>(y), batch, r, d,
          align_corners);
    }
  });
  if (!found) {
    return absl::UnimplementedError(
        absl::StrCat("no CUDA AffineGrid for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus("AffineGrid");
}

bool HasPoolKernel(GpuDtype dtype) {
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) { found = kIsOrdered<decltype(tag)>; });
  return found;
}

absl::Status LaunchPool(GpuDtype dtype, const PoolGeometry& g, const void* x,
                        void* y, int64_t* indices, cudaStream_t stream) {
  int64_t total = g.planes;
  for (int d = 0; d < g.n; ++d) total *= g.out[d];
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsOrdered<T>) {
      found = true;
      if (total == 0) return;
      PoolKernel<T><<<GridFor(total), kThreads, 0, stream>>>(
          g, static_cast<const T*>(x), static_cast<T*>(y), indices);
    }
  });
  if (!found) {
    return absl::UnimplementedError(
        absl::StrCat("no CUDA PoolND for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus("PoolND");
}

bool HasGridSampleKernel(GpuDtype dtype) {
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) { found = kIsFloat<decltype(tag)>; });
  return found;
}

absl::Status LaunchGridSample(GpuDtype dtype, const GridSampleGeometry& g,
                              const void* x, const void* grid, void* y,
                              cudaStream_t stream) {
  const int64_t total = g.batch * g.channels * g.out_plane;
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      found = true;
      if (total == 0) return;
      GridSampleKernel<T><<<GridFor(total), kThreads, 0, stream>>>(
          g, static_cast<const T*>(x), static_cast<const T*>(grid),
          static_cast<T*>(y));
    }
  });
  if (!found) {
    return absl::UnimplementedError(
        absl::StrCat("no CUDA GridSample for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus("GridSample");
}

}  // namespace sluice::cuda
