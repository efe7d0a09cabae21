// GridSample (ONNX opset 20, N-d): X [N, C, D1..Dr] sampled at grid
// [N, D1'..Dr', r] (the last dim lists x, y, z...: the innermost spatial dim
// first). Per output point and axis, the coordinate is denormalised,
// clamped or reflected by padding_mode, and turned into taps (input index
// or -1 for a zero, weight); the value is the sum over the product of the
// axes' taps, as in the ONNX reference.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/window_nd.h"
#include "kernels/launch_kernel.h"
#include "kernels/vision_params.h"

namespace sluice::cpu {
namespace {

using Interp = GridInterp;
using Padding = GridPadding;

struct Tap {
  int64_t index;  // -1: a zero
  double weight;
};

double Reflect(double x, double lo, double hi) {
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

double CubicWeight(double x) {
  constexpr double a = -0.75;
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

struct AxisSampler {
  Interp interp;
  Padding padding;
  bool align_corners;
  int64_t len;

  double lo() const { return align_corners ? 0.0 : -0.5; }
  double hi() const {
    return align_corners ? static_cast<double>(len - 1)
                         : static_cast<double>(len) - 0.5;
  }
  int64_t Pixel(int64_t i) const {
    if (i >= 0 && i < len) return i;
    if (padding == Padding::kZeros) return -1;
    if (padding == Padding::kBorder) return std::clamp<int64_t>(i, 0, len - 1);
    const int64_t r = static_cast<int64_t>(
        Reflect(static_cast<double>(i), lo(), hi()));
    return std::clamp<int64_t>(r, 0, len - 1);
  }
  // Taps for normalised coordinate g in [-1, 1].
  void Taps(double g, std::vector<Tap>* taps) const {
    taps->clear();
    const double l = static_cast<double>(len);
    double x = align_corners ? (g + 1) / 2 * (l - 1) : ((g + 1) * l - 1) / 2;
    if (interp == Interp::kNearest) x = std::nearbyint(x);
    if (x < lo() || x > hi()) {
      if (padding == Padding::kBorder) {
        x = std::clamp(x, 0.0, l - 1);
      } else if (padding == Padding::kReflection) {
        x = Reflect(x, lo(), hi());
      }
    }
    if (interp == Interp::kNearest) {
      taps->push_back({Pixel(static_cast<int64_t>(x)), 1.0});
      return;
    }
    const double f = std::floor(x);
    const int64_t x0 = static_cast<int64_t>(f);
    const double t = x - f;
    if (interp == Interp::kLinear) {
      taps->push_back({Pixel(x0), 1 - t});
      taps->push_back({Pixel(x0 + 1), t});
      return;
    }
    for (int k = -1; k <= 2; ++k) {
      taps->push_back({Pixel(x0 + k), CubicWeight(t - k)});
    }
  }
};

class GridSampleKernel final
    : public LaunchKernel<GridSampleAttrs, ParseGridSampleAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override;

 private:
  template <typename T>
  void Sample(const Tensor& x, const Tensor& grid, Tensor* y) const;
};

template <typename T>
void GridSampleKernel::Sample(const Tensor& x, const Tensor& grid,
                              Tensor* y) const {
  const int r = x.rank() - 2;
  const int64_t batch = x.dim(0), channels = x.dim(1);
  std::vector<AxisSampler> axes(r);
  std::vector<int64_t> in_strides(r, 1);
  int64_t in_plane = 1;
  for (int d = r - 1; d >= 0; --d) {
    axes[d] = {attrs().interp, attrs().padding, attrs().align_corners,
               x.dim(2 + d)};
    in_strides[d] = in_plane;
    in_plane *= x.dim(2 + d);
  }
  int64_t out_plane = 1;
  for (int d = 0; d < r; ++d) out_plane *= grid.dim(1 + d);
  const T* in = x.data<T>();
  const T* g = grid.data<T>();
  T* out = y->data<T>();
  std::vector<std::vector<Tap>> taps(r);
  std::vector<size_t> pick(r);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t p = 0; p < out_plane; ++p) {
      const T* coords = g + (n * out_plane + p) * r;
      for (int d = 0; d < r; ++d) {
        axes[d].Taps(ToDouble(coords[r - 1 - d]), &taps[d]);
      }
      for (int64_t c = 0; c < channels; ++c) {
        const T* plane = in + (n * channels + c) * in_plane;
        double acc = 0;
        std::fill(pick.begin(), pick.end(), 0);
        while (true) {
          double w = 1;
          int64_t off = 0;
          for (int d = 0; d < r && w != 0; ++d) {
            const Tap& t = taps[d][pick[d]];
            if (t.index < 0) w = 0;
            w *= t.weight;
            off += t.index * in_strides[d];
          }
          if (w != 0) acc += w * ToDouble(plane[off]);
          int d = r - 1;
          for (; d >= 0; --d) {
            if (++pick[d] < taps[d].size()) break;
            pick[d] = 0;
          }
          if (d < 0) break;
        }
        out[(n * channels + c) * out_plane + p] = FromDouble<T>(acc);
      }
    }
  }
}

absl::Status GridSampleKernel::Compute(OpKernelContext* ctx) {
  RETURN_IF_ERROR(CheckHostInputs(*ctx));
  const Tensor& x = ctx->input(0);
  const Tensor& grid = ctx->input(1);
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, GridSampleDims(x, grid));
  ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(dims)));
  if (y->NumElements() == 0) return absl::OkStatus();
  return VisitFloat(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    Sample<T>(x, grid, y);
    return absl::OkStatus();
  });
}

}  // namespace

void RegisterGridSampleKernels(KernelRegistry* r) {
  r->Register(CpuKernel("GridSample", {{"T", CpuFloatTypes()}},
                        MakeKernel<GridSampleKernel>));
}

}  // namespace sluice::cpu
