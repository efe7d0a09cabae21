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

// grid_sample.cc's Reflect.
__device__ double Reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

__device__ double GridCubic(double x) {
  constexpr double a = -0.75;
  x = fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Up to four taps of one axis (grid_sample.cc's AxisSampler).
struct AxisTaps {
  int count = 0;
  int64_t index[4];  // -1: a zero
  double weight[4];
};

__device__ int64_t Pixel(const GridSampleGeometry& g, int64_t len, double lo,
                         double hi, int64_t i) {
  if (i >= 0 && i < len) return i;
  if (g.padding == GpuGridPadding::kZeros) return -1;
  if (g.padding == GpuGridPadding::kBorder) {
    return i < 0 ? 0 : len - 1;
  }
  int64_t r = static_cast<int64_t>(Reflect(static_cast<double>(i), lo, hi));
  return r < 0 ? 0 : (r > len - 1 ? len - 1 : r);
}

__device__ void MakeAxisTaps(const GridSampleGeometry& g, int64_t len,
                             double coord, AxisTaps* t) {
  const double l = static_cast<double>(len);
  const double lo = g.align_corners ? 0.0 : -0.5;
  const double hi = g.align_corners ? l - 1 : l - 0.5;
  double x = g.align_corners ? (coord + 1) / 2 * (l - 1)
                             : ((coord + 1) * l - 1) / 2;
  if (g.interp == GpuGridInterp::kNearest) x = rint(x);
  if (x < lo || x > hi) {
    if (g.padding == GpuGridPadding::kBorder) {
      x = fmin(fmax(x, 0.0), l - 1);
    } else if (g.padding == GpuGridPadding::kReflection) {
      x = Reflect(x, lo, hi);
    }
  }
  if (g.interp == GpuGridInterp::kNearest) {
    t->count = 1;
    t->index[0] = Pixel(g, len, lo, hi, static_cast<int64_t>(x));
    t->weight[0] = 1.0;
    return;
  }
  const double f = floor(x);
  const int64_t x0 = static_cast<int64_t>(f);
  const double frac = x - f;
  if (g.interp == GpuGridInterp::kLinear) {
    t->count = 2;
    t->index[0] = Pixel(g, len, lo, hi, x0);
    t->weight[0] = 1 - frac;
    t->index[1] = Pixel(g, len, lo, hi, x0 + 1);
    t->weight[1] = frac;
    return;
  }
  t->count = 4;
  for (int k = -1; k <= 2; ++k) {
    t->index[k + 1] = Pixel(g, len, lo, hi, x0 + k);
    t->weight[k + 1] = GridCubic(frac - k);
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
    AxisTaps taps[kMaxSpatialDims];
    for (int d = 0; d < r; ++d) {
      MakeAxisTaps(g, g.in[d], ToDouble(coords[r - 1 - d]), &taps[d]);
    }
    const T* plane = x + nc * in_plane;
    double acc = 0;
    int pick[kMaxSpatialDims] = {};
    while (true) {
      double w = 1;
      int64_t off = 0;
      for (int d = 0; d < r && w != 0; ++d) {
        const int64_t index = taps[d].index[pick[d]];
        if (index < 0) w = 0;
        w *= taps[d].weight[pick[d]];
        off += index * in_strides[d];
      }
      if (w != 0) acc += w * ToDouble(plane[off]);
      int d = r - 1;
      for (; d >= 0; --d) {
        if (++pick[d] < taps[d].count) break;
        pick[d] = 0;
      }
      if (d < 0) break;
    }
    y[e] = FromDouble<T>(acc);
  }
}

struct AffineDims {
  int64_t d[3];
};

// affine_grid's GridCoord (kernels/cpu/vision_misc.cc).
__device__ double GridCoord(int64_t i, int64_t size, bool align_corners) {
  const double s = static_cast<double>(size);
  if (align_corners) return size == 1 ? -1.0 : -1.0 + 2.0 * i / (s - 1);
  return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / s;
}

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

// One bilinear sample of RoiAlign (vision_misc.cc's Bilinear): four
// offsets and weights, all 0 outside.
struct RoiSample {
  int64_t off[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

__device__ RoiSample Bilinear(double y, double x, int64_t h, int64_t w) {
  RoiSample s;
  if (y < -1.0 || y > static_cast<double>(h) || x < -1.0 ||
      x > static_cast<double>(w)) {
    return s;
  }
  y = fmax(y, 0.0);
  x = fmax(x, 0.0);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1, x1;
  if (y0 >= h - 1) {
    y0 = y1 = h - 1;
    y = static_cast<double>(y0);
  } else {
    y1 = y0 + 1;
  }
  if (x0 >= w - 1) {
    x0 = x1 = w - 1;
    x = static_cast<double>(x0);
  } else {
    x1 = x0 + 1;
  }
  const double ly = y - y0, lx = x - x0, hy = 1 - ly, hx = 1 - lx;
  s.off[0] = y0 * w + x0;
  s.off[1] = y0 * w + x1;
  s.off[2] = y1 * w + x0;
  s.off[3] = y1 * w + x1;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
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
  const double offset = g.half_pixel ? 0.5 : 0.0;
  const double scale = g.spatial_scale;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t b = e % bins;
    const int64_t c = (e / bins) % g.channels;
    const int64_t n = e / (bins * g.channels);
    const double x0 = ToDouble(rois[n * 4 + 0]) * scale - offset;
    const double y0 = ToDouble(rois[n * 4 + 1]) * scale - offset;
    const double x1 = ToDouble(rois[n * 4 + 2]) * scale - offset;
    const double y1 = ToDouble(rois[n * 4 + 3]) * scale - offset;
    double rw = x1 - x0, rh = y1 - y0;
    if (!g.half_pixel) {
      rw = StdMax(rw, 1.0);
      rh = StdMax(rh, 1.0);
    }
    const double bh = rh / static_cast<double>(g.out_h);
    const double bw = rw / static_cast<double>(g.out_w);
    const int64_t gh = g.sampling_ratio > 0
                           ? g.sampling_ratio
                           : static_cast<int64_t>(ceil(rh / g.out_h));
    const int64_t gw = g.sampling_ratio > 0
                           ? g.sampling_ratio
                           : static_cast<int64_t>(ceil(rw / g.out_w));
    const int64_t cells = gh * gw;
    const double count = static_cast<double>(cells > 1 ? cells : 1);
    const int64_t ph = b / g.out_w, pw = b % g.out_w;
    const T* plane = x + (batch[n] * g.channels + c) * g.h * g.w;
    double acc = 0;
    bool first = true;
    for (int64_t iy = 0; iy < gh; ++iy) {
      const double yy = y0 + ph * bh + (iy + 0.5) * bh / gh;
      for (int64_t ix = 0; ix < gw; ++ix) {
        const double xx = x0 + pw * bw + (ix + 0.5) * bw / gw;
        const RoiSample sm = Bilinear(yy, xx, g.h, g.w);
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
