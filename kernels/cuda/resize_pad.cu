// Resize (one thread per output element of a pass, in double, with the CPU
// kernel's taps: kernels/cpu/resize.cc) and Pad (one thread per output
// element, by element size: kernels/cpu/pad.cc).
#include <type_traits>

#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/resize_pad.h"

namespace sluice::cuda {
namespace {

template <typename T>
__device__ __forceinline__ T FromDouble(double v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(rint(v));
  } else if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return FromWide<T>(static_cast<float>(v));
  }
}

template <typename T>
static __global__ void ToDoubleKernel(const T* x, double* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = ToDouble(x[i]);
  }
}

template <typename T>
static __global__ void FromDoubleKernel(const double* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = FromDouble<T>(x[i]);
  }
}

__device__ double CubicAt(double x, double a) {
  x = fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// The input coordinate of output index o (resize.cc's SourceCoord).
__device__ double SourceCoord(const ResizeParams& p,
                              const ResizeAxisGeometry& g, int64_t o) {
  const double x = static_cast<double>(o);
  const double scale = g.scale;
  const double resized = scale * static_cast<double>(g.in_len);
  switch (p.transform) {
    case ResizeTransform::kAsymmetric:
      return x / scale;
    case ResizeTransform::kAlignCorners:
      return resized == 1
                 ? 0
                 : x * static_cast<double>(g.in_len - 1) / (resized - 1);
    case ResizeTransform::kPytorchHalfPixel:
      return g.out_len > 1 ? (x + 0.5) / scale - 0.5 : 0;
    case ResizeTransform::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(g.out_len) /
                                (scale * static_cast<double>(g.in_len));
      const double center = static_cast<double>(g.in_len) / 2;
      return center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
    }
    case ResizeTransform::kTfCropAndResize: {
      const double span = static_cast<double>(g.in_len - 1);
      if (resized != 1) {
        return g.roi_start * span +
               x * (g.roi_end - g.roi_start) * span / (resized - 1);
      }
      return 0.5 * (g.roi_start + g.roi_end) * span;
    }
    case ResizeTransform::kHalfPixel:
      break;
  }
  return (x + 0.5) / scale - 0.5;
}

// Whether the antialiased (stretched) filter applies.
__device__ bool Stretched(const ResizeParams& p, double scale) {
  return p.mode != ResizeMode::kNearest && p.antialias && scale < 1.0;
}

// Number of coefficients (resize.cc's Coeffs) and, when stretched, the
// offset of the first one.
__device__ int64_t NumCoeffs(const ResizeParams& p, double scale,
                             int64_t* start) {
  *start = 0;
  if (p.mode == ResizeMode::kNearest) return 2;
  const bool cubic = p.mode == ResizeMode::kCubic;
  if (!Stretched(p, scale)) return cubic ? 4 : 2;
  *start = static_cast<int64_t>(floor((cubic ? -2.0 : -1.0) / scale)) + 1;
  return 2 - 2 * *start;
}

// Coefficient i before the antialias normalisation.
__device__ double RawCoeff(const ResizeParams& p, double ratio, double scale,
                           int64_t start, int64_t i) {
  if (p.mode == ResizeMode::kNearest) {
    if (ratio == 1.0) return i == 0 ? 0.0 : 1.0;
    bool up = false;
    switch (p.nearest) {
      case NearestMode::kRoundPreferFloor: up = ratio > 0.5; break;
      case NearestMode::kRoundPreferCeil: up = ratio >= 0.5; break;
      case NearestMode::kCeil: up = true; break;
      case NearestMode::kFloor: break;
    }
    return (i == 0) == up ? 0.0 : 1.0;
  }
  const bool cubic = p.mode == ResizeMode::kCubic;
  if (!Stretched(p, scale)) {
    if (!cubic) return i == 0 ? 1 - ratio : ratio;
    switch (i) {
      case 0: return CubicAt(ratio + 1, p.cubic_a);
      case 1: return CubicAt(ratio, p.cubic_a);
      case 2: return CubicAt(1 - ratio, p.cubic_a);
      default: return CubicAt(2 - ratio, p.cubic_a);
    }
  }
  const double x = scale * (static_cast<double>(start + i) - ratio);
  return cubic ? CubicAt(x, p.cubic_a) : fmin(fmax(1 - fabs(x), 0.0), 1.0);
}

static __global__ void ResizeAxisKernel(ResizeParams p, ResizeAxisGeometry g,
                                        const double* in, double* out) {
  const int64_t total = g.outer * g.out_len * g.inner;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = e % g.inner;
    const int64_t j = (e / g.inner) % g.out_len;
    const int64_t o = e / (g.inner * g.out_len);
    const double x = SourceCoord(p, g, j);
    if (p.transform == ResizeTransform::kTfCropAndResize &&
        (x < 0 || x > static_cast<double>(g.in_len - 1))) {
      out[e] = p.extrapolation;
      continue;
    }
    const double base = ceil(x) - 1;  // ratio in (0, 1]
    const double ratio = x - base;
    int64_t start = 0;
    const int64_t n = NumCoeffs(p, g.scale, &start);
    double norm = 1;  // the antialias sum
    const bool stretched = Stretched(p, g.scale);
    if (stretched) {
      norm = 0;
      for (int64_t k = 0; k < n; ++k) norm += RawCoeff(p, ratio, g.scale, start, k);
    }
    const int64_t first = static_cast<int64_t>(base) + 1 - n / 2;
    auto coeff = [&](int64_t k) {
      const double c = RawCoeff(p, ratio, g.scale, start, k);
      return stretched ? c / norm : c;
    };
    double sum = 0;
    if (p.exclude_outside) {
      for (int64_t k = 0; k < n; ++k) {
        const int64_t idx = first + k;
        if (idx >= 0 && idx < g.in_len) sum += coeff(k);
      }
    }
    const double* src = in + o * g.in_len * g.inner + i;
    double acc = 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t idx = first + k;
      double c = coeff(k);
      if (p.exclude_outside && (idx < 0 || idx >= g.in_len)) c = 0;
      if (c == 0) continue;
      const double w = p.exclude_outside && sum != 0 ? c / sum : c;
      const int64_t at = idx < 0 ? 0 : (idx >= g.in_len ? g.in_len - 1 : idx);
      acc += w * src[at * g.inner];
    }
    out[e] = acc;
  }
}

// Index into [0, n) of position i for the mode; -1 for the constant
// (pad.cc's SourceIndex).
__device__ int64_t PadSource(int64_t i, int64_t n, GpuPadMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case GpuPadMode::kConstant:
      return -1;
    case GpuPadMode::kEdge:
      return i < 0 ? 0 : n - 1;
    case GpuPadMode::kWrap:
      return ((i % n) + n) % n;
    case GpuPadMode::kReflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      const int64_t r = ((i % period) + period) % period;
      return r < n ? r : period - r;
    }
  }
  return -1;
}

template <int kBytes>
static __global__ void PadKernel(PadGeometry g, const void* x, uint64_t fill,
                                 void* y) {
  using U = typename Bits<kBytes>::type;
  const U* in = static_cast<const U*>(x);
  U* out = static_cast<U*>(y);
  const U value = static_cast<U>(fill);
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
       e < g.total; e += int64_t{gridDim.x} * blockDim.x) {
    int64_t rem = e, off = 0;
    bool constant = false;
    for (int d = g.rank - 1; d >= 0; --d) {
      const int64_t od = rem % g.out_dims[d];
      rem /= g.out_dims[d];
      const int64_t s = PadSource(od - g.begin[d], g.len[d], g.mode);
      if (s < 0) {
        constant = true;
        break;
      }
      off += (s + g.lo[d]) * g.in_strides[d];
    }
    out[e] = constant ? value : in[off];
  }
}

}  // namespace

bool HasResizeKernel(GpuDtype dtype) {
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) { found = kIsArith<decltype(tag)>; });
  return found;
}

absl::Status LaunchToDouble(GpuDtype dtype, const void* x, double* y,
                            int64_t n, cudaStream_t stream) {
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsArith<T>) {
      found = true;
      if (n == 0) return;
      ToDoubleKernel<T><<<GridFor(n), kThreads, 0, stream>>>(
          static_cast<const T*>(x), y, n);
    }
  });
  if (!found) {
    return absl::UnimplementedError(
        absl::StrCat("no CUDA Resize for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus("Resize (to double)");
}

absl::Status LaunchFromDouble(GpuDtype dtype, const double* x, void* y,
                              int64_t n, cudaStream_t stream) {
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsArith<T>) {
      found = true;
      if (n == 0) return;
      FromDoubleKernel<T><<<GridFor(n), kThreads, 0, stream>>>(
          x, static_cast<T*>(y), n);
    }
  });
  if (!found) {
    return absl::UnimplementedError(
        absl::StrCat("no CUDA Resize for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus("Resize (from double)");
}

absl::Status LaunchResizeAxis(const ResizeParams& p,
                              const ResizeAxisGeometry& g, const double* in,
                              double* out, cudaStream_t stream) {
  const int64_t total = g.outer * g.out_len * g.inner;
  if (total == 0) return absl::OkStatus();
  ResizeAxisKernel<<<GridFor(total), kThreads, 0, stream>>>(p, g, in, out);
  return LaunchStatus("Resize");
}

absl::Status LaunchPad(int element_bytes, const PadGeometry& g, const void* x,
                       uint64_t fill, void* y, cudaStream_t stream) {
  if (g.total == 0) return absl::OkStatus();
  const unsigned int grid = GridFor(g.total);
  switch (element_bytes) {
    case 1: PadKernel<1><<<grid, kThreads, 0, stream>>>(g, x, fill, y); break;
    case 2: PadKernel<2><<<grid, kThreads, 0, stream>>>(g, x, fill, y); break;
    case 4: PadKernel<4><<<grid, kThreads, 0, stream>>>(g, x, fill, y); break;
    case 8: PadKernel<8><<<grid, kThreads, 0, stream>>>(g, x, fill, y); break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("Pad: unsupported element size ", element_bytes));
  }
  return LaunchStatus("Pad");
}

}  // namespace sluice::cuda
