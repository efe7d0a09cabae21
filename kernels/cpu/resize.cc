// Resize (ONNX opset 19 semantics): nearest, linear and cubic, every
// coordinate_transformation_mode, antialias, exclude_outside and
// tf_crop_and_resize's extrapolation. Interpolation is separable, so it runs
// as one pass per resized axis, each pass a weighted sum of input points
// along that axis (in double). Per axis and output index a Tap list holds the
// input indices (clamped: the ONNX reference pads with edge values) and
// their weights, computed as the reference's interpolate_1d_with_x does.
// float32 resized along its last two axes only (an image's planes) runs the
// same taps in float (ResizePlanesFloat).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/window_nd.h"
#include "kernels/launch_kernel.h"
#include "kernels/vision_params.h"

namespace sluice::cpu {
namespace {


// The input points (clamped indices) and weights of one output index along
// one axis; `extrapolate`: the point lies outside the crop (tf_crop_and_
// resize) and takes the extrapolation value.
struct Taps {
  std::vector<int64_t> index;
  std::vector<double> weight;
  bool extrapolate = false;
};

double CubicAt(double x, double a) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Weights for points base+1-n/2 .. base+n/2 where ratio = x - base in (0, 1].
std::vector<double> Coeffs(const ResizeAttrs& a, double ratio, double scale) {
  if (a.mode == "nearest") {
    if (ratio == 1.0) return {0, 1};
    const std::string& m = a.nearest_mode;
    bool up = false;
    if (m == "round_prefer_floor") up = ratio > 0.5;
    if (m == "round_prefer_ceil") up = ratio >= 0.5;
    if (m == "ceil") up = true;
    return {up ? 0.0 : 1.0, up ? 1.0 : 0.0};
  }
  const bool cubic = a.mode == "cubic";
  if (!a.antialias || scale >= 1.0) {
    if (!cubic) return {1 - ratio, ratio};
    return {CubicAt(ratio + 1, a.cubic_a), CubicAt(ratio, a.cubic_a),
            CubicAt(1 - ratio, a.cubic_a), CubicAt(2 - ratio, a.cubic_a)};
  }
  // Antialias when downsampling: the filter stretched by 1 / scale.
  const int64_t start =
      static_cast<int64_t>(std::floor((cubic ? -2.0 : -1.0) / scale)) + 1;
  const int64_t n = 2 - 2 * start;
  std::vector<double> c(n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = scale * (static_cast<double>(start + i) - ratio);
    c[i] = cubic ? CubicAt(x, a.cubic_a)
                 : std::clamp(1 - std::abs(x), 0.0, 1.0);
    sum += c[i];
  }
  for (double& v : c) v /= sum;
  return c;
}

// The input coordinate of output index `o` along an axis.
double SourceCoord(const ResizeAttrs& a, int64_t o, double scale,
                   int64_t in_len, int64_t out_len, double roi_start,
                   double roi_end) {
  const double x = static_cast<double>(o);
  // As in the ONNX reference: align_corners and tf_crop_and_resize use the
  // unrounded resized length, scale * in_len.
  const double resized = scale * static_cast<double>(in_len);
  const std::string& t = a.transform;
  if (t == "asymmetric") return x / scale;
  if (t == "align_corners") {
    return resized == 1 ? 0
                        : x * static_cast<double>(in_len - 1) / (resized - 1);
  }
  if (t == "pytorch_half_pixel") {
    return out_len > 1 ? (x + 0.5) / scale - 0.5 : 0;
  }
  if (t == "half_pixel_symmetric") {
    const double adjustment = static_cast<double>(out_len) /
                              (scale * static_cast<double>(in_len));
    const double center = static_cast<double>(in_len) / 2;
    return center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
  }
  if (t == "tf_crop_and_resize") {
    const double span = static_cast<double>(in_len - 1);
    if (resized != 1) {
      return roi_start * span + x * (roi_end - roi_start) * span /
                                    (resized - 1);
    }
    return 0.5 * (roi_start + roi_end) * span;
  }
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

Taps MakeTaps(const ResizeAttrs& a, int64_t o, double scale, int64_t in_len,
              int64_t out_len, double roi_start, double roi_end) {
  Taps t;
  const double x =
      SourceCoord(a, o, scale, in_len, out_len, roi_start, roi_end);
  if (a.transform == "tf_crop_and_resize" &&
      (x < 0 || x > static_cast<double>(in_len - 1))) {
    t.extrapolate = true;
    return t;
  }
  const double base = std::ceil(x) - 1;  // ratio in (0, 1]
  std::vector<double> c = Coeffs(a, x - base, scale);
  const int64_t n = static_cast<int64_t>(c.size());
  const int64_t first = static_cast<int64_t>(base) + 1 - n / 2;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t idx = first + i;
    if (a.exclude_outside && (idx < 0 || idx >= in_len)) c[i] = 0;
    sum += c[i];
  }
  for (int64_t i = 0; i < n; ++i) {
    if (c[i] == 0) continue;
    t.index.push_back(std::clamp<int64_t>(first + i, 0, in_len - 1));
    t.weight.push_back(a.exclude_outside && sum != 0 ? c[i] / sum : c[i]);
  }
  return t;
}

// One pass along `axis`: in [outer, in_len, inner] -> out [outer, out_len,
// inner].
void ResizeAxis(const OpKernelContext& ctx, const std::vector<double>& in,
                std::vector<double>* out, int64_t outer, int64_t in_len,
                int64_t inner, const std::vector<Taps>& taps,
                double extrapolation) {
  const int64_t out_len = static_cast<int64_t>(taps.size());
  out->assign(outer * out_len * inner, 0.0);
  ParallelFor(ctx, outer, static_cast<double>(out_len * inner * 4),
              [&](int64_t b, int64_t e) {
                for (int64_t o = b; o < e; ++o) {
                  const double* src = in.data() + o * in_len * inner;
                  double* dst = out->data() + o * out_len * inner;
                  for (int64_t j = 0; j < out_len; ++j) {
                    double* row = dst + j * inner;
                    const Taps& t = taps[j];
                    if (t.extrapolate) {
                      std::fill(row, row + inner, extrapolation);
                      continue;
                    }
                    for (size_t k = 0; k < t.index.size(); ++k) {
                      const double* s = src + t.index[k] * inner;
                      const double w = t.weight[k];
                      for (int64_t i = 0; i < inner; ++i) row[i] += w * s[i];
                    }
                  }
                }
              });
}

// float32 resized along its last two axes alone (a segmentation head's
// upsampling, NCHW): per plane, rows then columns, in float with the same
// taps, the weights rounded to float. Returns false, having written
// nothing, for any other problem (the double path above runs it).
bool ResizePlanesFloat(const OpKernelContext& ctx, const ResizeAttrs& a,
                       const ResizePlan& p, const Tensor& x, Tensor* y) {
  const int rank = x.rank();
  if (x.dtype() != DT_FLOAT || rank < 2) return false;
  int64_t planes = 1;
  for (int d = 0; d < rank - 2; ++d) {
    if (p.in_dims[d] != p.out_dims[d] || p.scale[d] != 1.0) return false;
    planes *= p.in_dims[d];
  }
  // Per axis: each output index's taps, at most kMax of them.
  constexpr int kMax = 4;
  struct Axis {
    int64_t in = 0, out = 0;
    int taps = 0;                // the most taps of any output index
    std::vector<int64_t> index;  // out * kMax
    std::vector<float> weight;   // out * kMax, 0 past the taps
  } axes[2];
  for (int k = 0; k < 2; ++k) {
    const int d = rank - 2 + k;
    Axis& ax = axes[k];
    ax.in = p.in_dims[d];
    ax.out = p.out_dims[d];
    ax.index.assign(ax.out * kMax, 0);
    ax.weight.assign(ax.out * kMax, 0.0f);
    for (int64_t o = 0; o < ax.out; ++o) {
      const Taps t = MakeTaps(a, o, p.scale[d], ax.in, ax.out, p.roi_start[d],
                              p.roi_end[d]);
      if (t.extrapolate || t.index.size() > kMax) return false;
      ax.taps = std::max(ax.taps, static_cast<int>(t.index.size()));
      for (size_t i = 0; i < t.index.size(); ++i) {
        ax.index[o * kMax + i] = t.index[i];
        ax.weight[o * kMax + i] = static_cast<float>(t.weight[i]);
      }
    }
  }
  const Axis& rows = axes[0];
  const Axis& cols = axes[1];
  const float* in = x.data<float>();
  float* out = y->data<float>();
  ParallelFor(ctx, planes * rows.out,
              static_cast<double>(cols.in * kMax + cols.out * kMax),
              [&](int64_t b, int64_t e) {
                std::vector<float> row(cols.in);
                for (int64_t r = b; r < e; ++r) {
                  const int64_t plane = r / rows.out, oy = r % rows.out;
                  const float* src = in + plane * rows.in * cols.in;
                  std::fill(row.begin(), row.end(), 0.0f);
                  for (int k = 0; k < kMax; ++k) {
                    const float w = rows.weight[oy * kMax + k];
                    if (w == 0.0f) continue;
                    const float* s = src + rows.index[oy * kMax + k] * cols.in;
                    for (int64_t i = 0; i < cols.in; ++i) row[i] += w * s[i];
                  }
                  float* dst = out + r * cols.out;
                  for (int64_t ox = 0; ox < cols.out; ++ox) {
                    const int64_t* idx = &cols.index[ox * kMax];
                    const float* w = &cols.weight[ox * kMax];
                    // Only the taps some index has (2 for linear): the
                    // rest are zero weights.
                    float v = 0.0f;
                    for (int k = 0; k < cols.taps; ++k) v += w[k] * row[idx[k]];
                    dst[ox] = v;
                  }
                }
              });
  return true;
}

class ResizeKernel final : public LaunchKernel<ResizeAttrs, ParseResizeAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override;
};

absl::Status ResizeKernel::Compute(OpKernelContext* ctx) {
  RETURN_IF_ERROR(CheckHostInputs(*ctx));
  const Tensor& x = ctx->input(0);
  ASSIGN_OR_RETURN(ResizePlan p, PlanResize(attrs(), x, ctx->input(1),
                                            ctx->input(2), ctx->input(3)));
  const int rank = x.rank();
  const std::vector<int64_t>& in_dims = p.in_dims;
  const std::vector<int64_t>& out_dims = p.out_dims;
  const std::vector<double>& scale = p.scale;
  const std::vector<double>& roi_start = p.roi_start;
  const std::vector<double>& roi_end = p.roi_end;
  ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(out_dims)));
  if (y->NumElements() == 0) return absl::OkStatus();
  if (ResizePlanesFloat(*ctx, attrs(), p, x, y)) return absl::OkStatus();
  return VisitArith(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    std::vector<double> cur(x.NumElements()), next;
    const T* src = x.data<T>();
    for (int64_t i = 0; i < x.NumElements(); ++i) {
      cur[i] = ToDouble(src[i]);
    }
    std::vector<int64_t> dims = in_dims;
    for (int d = 0; d < rank; ++d) {
      const bool identity = dims[d] == out_dims[d] && scale[d] == 1.0 &&
                            attrs().transform != "tf_crop_and_resize";
      if (identity) continue;
      std::vector<Taps> taps(out_dims[d]);
      for (int64_t o = 0; o < out_dims[d]; ++o) {
        taps[o] = MakeTaps(attrs(), o, scale[d], in_dims[d], out_dims[d],
                           roi_start[d], roi_end[d]);
      }
      int64_t outer = 1, inner = 1;
      for (int i = 0; i < d; ++i) outer *= dims[i];
      for (int i = d + 1; i < rank; ++i) inner *= dims[i];
      ResizeAxis(*ctx, cur, &next, outer, dims[d], inner, taps,
                 attrs().extrapolation);
      cur.swap(next);
      dims[d] = out_dims[d];
    }
    T* dst = y->data<T>();
    for (int64_t i = 0; i < y->NumElements(); ++i) {
      if constexpr (std::is_integral_v<T>) {
        dst[i] = static_cast<T>(std::nearbyint(cur[i]));
      } else {
        dst[i] = FromDouble<T>(cur[i]);
      }
    }
    return absl::OkStatus();
  });
}

}  // namespace

void RegisterResizeKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Resize", {{"T", CpuArithTypes()}},
                        MakeKernel<ResizeKernel>));
}

}  // namespace sluice::cpu
