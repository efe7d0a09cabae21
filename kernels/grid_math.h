// The sampling math of GridSample, AffineGrid and RoiAlign that their CPU
// kernels (kernels/cpu/grid_sample.cc, vision_misc.cc) and CUDA kernels
// (kernels/cuda/pool_grid.cu) share, so both devices compute the same
// thing: per axis of a grid point, the input indices and weights
// (GridAxisTaps, ONNX GridSample's denormalising, padding modes and
// interpolations), a normalised grid coordinate (AffineGrid), and
// RoiAlign's bilinear sample. Free of protobuf and graph headers, so .cu
// files include it (kernels/vision_params.h parses the attributes).
//
//   GridAxisTaps t;
//   MakeGridAxisTaps(GridInterp::kLinear, GridPadding::kZeros,
//                    /*align_corners=*/false, /*len=*/8, coord, &t);
//   // value = sum over k < t.count of t.weight[k] * x[t.index[k]] (-1: 0)
//
// Value types and pure functions; thread-safe. Marked for device code
// only when a CUDA compiler reads this header.
#ifndef SLUICE_KERNELS_GRID_MATH_H_
#define SLUICE_KERNELS_GRID_MATH_H_

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define SLUICE_GRID_HD __host__ __device__
#else
#define SLUICE_GRID_HD
#endif

namespace sluice {

// GridSample's mode and padding_mode.
enum class GridInterp : int { kNearest, kLinear, kCubic };
enum class GridPadding : int { kZeros, kBorder, kReflection };

// x reflected into [lo, hi] (as often as it takes).
SLUICE_GRID_HD inline double GridReflect(double x, double lo, double hi) {
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

// The cubic convolution weight at distance x (a = -0.75, as ONNX).
SLUICE_GRID_HD inline double GridCubicWeight(double x) {
  constexpr double a = -0.75;
  x = fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Up to four taps of one axis: input index (-1: a zero) and weight.
struct GridAxisTaps {
  int count = 0;
  int64_t index[4] = {0, 0, 0, 0};
  double weight[4] = {0, 0, 0, 0};
};

// Input index i of an axis of `len` under `padding` (-1: a zero).
SLUICE_GRID_HD inline int64_t GridPixel(GridPadding padding, int64_t len, double lo,
                                        double hi, int64_t i) {
  if (i >= 0 && i < len) return i;
  if (padding == GridPadding::kZeros) return -1;
  if (padding == GridPadding::kBorder) return i < 0 ? 0 : len - 1;
  const int64_t r = static_cast<int64_t>(GridReflect(static_cast<double>(i), lo, hi));
  return r < 0 ? 0 : (r > len - 1 ? len - 1 : r);
}

// The taps of normalised coordinate `coord` (in [-1, 1] inside the input)
// along an axis of `len`.
SLUICE_GRID_HD inline void MakeGridAxisTaps(GridInterp interp, GridPadding padding,
                                            bool align_corners, int64_t len, double coord,
                                            GridAxisTaps* t) {
  const double l = static_cast<double>(len);
  const double lo = align_corners ? 0.0 : -0.5;
  const double hi = align_corners ? l - 1 : l - 0.5;
  double x = align_corners ? (coord + 1) / 2 * (l - 1) : ((coord + 1) * l - 1) / 2;
  if (interp == GridInterp::kNearest) x = rint(x);
  if (x < lo || x > hi) {
    if (padding == GridPadding::kBorder) {
      x = fmin(fmax(x, 0.0), l - 1);
    } else if (padding == GridPadding::kReflection) {
      x = GridReflect(x, lo, hi);
    }
  }
  if (interp == GridInterp::kNearest) {
    t->count = 1;
    t->index[0] = GridPixel(padding, len, lo, hi, static_cast<int64_t>(x));
    t->weight[0] = 1.0;
    return;
  }
  const double f = floor(x);
  const int64_t x0 = static_cast<int64_t>(f);
  const double frac = x - f;
  if (interp == GridInterp::kLinear) {
    t->count = 2;
    t->index[0] = GridPixel(padding, len, lo, hi, x0);
    t->weight[0] = 1 - frac;
    t->index[1] = GridPixel(padding, len, lo, hi, x0 + 1);
    t->weight[1] = frac;
    return;
  }
  t->count = 4;
  for (int k = -1; k <= 2; ++k) {
    t->index[k + 1] = GridPixel(padding, len, lo, hi, x0 + k);
    t->weight[k + 1] = GridCubicWeight(frac - k);
  }
}

// One output point of GridSample: the sum over every combination of the r
// axes' taps of the product of their weights times the input value there,
// `read(offset)` giving the value at an element offset into the plane
// (in_strides per axis). `pick` is scratch for r ints.
template <typename Read>
SLUICE_GRID_HD inline double GridSampleSum(const GridAxisTaps* taps, int r,
                                           const int64_t* in_strides, int* pick,
                                           Read read) {
  for (int d = 0; d < r; ++d) pick[d] = 0;
  double acc = 0;
  while (true) {
    double w = 1;
    int64_t off = 0;
    for (int d = 0; d < r && w != 0; ++d) {
      const int64_t index = taps[d].index[pick[d]];
      if (index < 0) w = 0;
      w *= taps[d].weight[pick[d]];
      off += index * in_strides[d];
    }
    if (w != 0) acc += w * read(off);
    int d = r - 1;
    for (; d >= 0; --d) {
      if (++pick[d] < taps[d].count) break;
      pick[d] = 0;
    }
    if (d < 0) return acc;
  }
}

// AffineGrid: the normalised coordinate of index i of `size` points.
SLUICE_GRID_HD inline double GridCoord(int64_t i, int64_t size, bool align_corners) {
  const double s = static_cast<double>(size);
  if (align_corners) return size == 1 ? -1.0 : -1.0 + 2.0 * i / (s - 1);
  return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / s;
}

// One bilinear sample of RoiAlign at (y, x) of an h x w plane: four
// offsets and weights, all 0 outside.
struct RoiSample {
  int64_t off[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};
SLUICE_GRID_HD inline RoiSample RoiBilinear(double y, double x, int64_t h, int64_t w) {
  RoiSample s;
  if (y < -1.0 || y > static_cast<double>(h) || x < -1.0 || x > static_cast<double>(w)) {
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

// RoiAlign's grid over one region of interest: its corner (y0, x0) in
// input pixels, each output bin's size (bh, bw) and the gh x gw sample
// points per bin; sample (iy, ix) of bin (ph, pw) is at (y0 + ph * bh +
// (iy + 0.5) * bh / gh, x0 + pw * bw + (ix + 0.5) * bw / gw).
struct RoiBins {
  double y0 = 0, x0 = 0, bh = 0, bw = 0;
  int64_t gh = 1, gw = 1;
  double count = 1;  // samples per bin, at least 1
};
// `box` is the region's (x1, y1, x2, y2) before scaling.
SLUICE_GRID_HD inline RoiBins RoiBinsFor(const double box[4], double spatial_scale,
                                         bool half_pixel, int64_t sampling_ratio,
                                         int64_t out_h, int64_t out_w) {
  const double offset = half_pixel ? 0.5 : 0.0;
  RoiBins b;
  b.x0 = box[0] * spatial_scale - offset;
  b.y0 = box[1] * spatial_scale - offset;
  double rw = box[2] * spatial_scale - offset - b.x0;
  double rh = box[3] * spatial_scale - offset - b.y0;
  if (!half_pixel) {
    rw = fmax(rw, 1.0);
    rh = fmax(rh, 1.0);
  }
  b.bh = rh / static_cast<double>(out_h);
  b.bw = rw / static_cast<double>(out_w);
  b.gh = sampling_ratio > 0 ? sampling_ratio : static_cast<int64_t>(ceil(rh / out_h));
  b.gw = sampling_ratio > 0 ? sampling_ratio : static_cast<int64_t>(ceil(rw / out_w));
  b.count = static_cast<double>(b.gh * b.gw > 1 ? b.gh * b.gw : 1);
  return b;
}

}  // namespace sluice

#endif  // SLUICE_KERNELS_GRID_MATH_H_
