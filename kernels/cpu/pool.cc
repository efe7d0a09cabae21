// MaxPool, AvgPool and GlobalAvgPool, NCHW, one task per plane on the
// intra-op pool (MaxPool row by row, vectorised). Padding never contributes
// to a maximum; AvgPool divides by the window's cells inside the image, or,
// with count_include_pad, by its cells inside the padded image. NHWC
// nodes (data_format) pool channels last in place, a task per output row.
#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/data_format.h"
#include "graph/shape_fns.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/layout.h"

namespace sluice::cpu {
namespace {

struct PoolGeometry {
  int64_t h, w, kh, kw, oh, ow, sh, sw, pt, pl, pb, pr;
};

enum class PoolKind { kMax, kAvg };

// One output plane from one input plane.
template <PoolKind kKind>
void PoolPlane(const float* in, float* out, const PoolGeometry& g,
               bool count_include_pad) {
  for (int64_t y = 0; y < g.oh; ++y) {
    for (int64_t x = 0; x < g.ow; ++x) {
      const int64_t y0 = y * g.sh - g.pt, x0 = x * g.sw - g.pl;
      const int64_t y1 = std::min(y0 + g.kh, g.h + g.pb);
      const int64_t x1 = std::min(x0 + g.kw, g.w + g.pr);
      const int64_t padded_cells = (y1 - y0) * (x1 - x0);
      const int64_t ys = std::max<int64_t>(y0, 0), ye = std::min(y1, g.h);
      const int64_t xs = std::max<int64_t>(x0, 0), xe = std::min(x1, g.w);
      float acc = kKind == PoolKind::kMax ? -INFINITY : 0.0f;
      for (int64_t iy = ys; iy < ye; ++iy) {
        for (int64_t ix = xs; ix < xe; ++ix) {
          const float v = in[iy * g.w + ix];
          if constexpr (kKind == PoolKind::kMax) {
            acc = (v > acc || std::isnan(v)) ? v : acc;
          } else {
            acc += v;
          }
        }
      }
      if constexpr (kKind == PoolKind::kAvg) {
        const int64_t cells =
            count_include_pad ? padded_cells : (ye - ys) * (xe - xs);
        acc = cells > 0 ? acc / static_cast<float>(cells) : 0.0f;
      }
      out[y * g.ow + x] = acc;
    }
  }
}

// MaxPool's plane, row by row: each output row starts at -inf and takes the
// maximum with one shifted (strided when sw > 1) input row per window cell,
// a loop over the output row that the compiler vectorises. NaN wins, as in
// PoolPlane.
void MaxPoolPlane(const float* in, float* out, const PoolGeometry& g) {
  for (int64_t y = 0; y < g.oh; ++y) {
    float* orow = out + y * g.ow;
    std::fill(orow, orow + g.ow, -INFINITY);
    const int64_t y0 = y * g.sh - g.pt;
    const int64_t ys = std::max<int64_t>(y0, 0);
    const int64_t ye = std::min(y0 + g.kh, g.h);
    for (int64_t iy = ys; iy < ye; ++iy) {
      const float* irow = in + iy * g.w;
      for (int64_t j = 0; j < g.kw; ++j) {
        // Output columns x whose input column x*sw + offset is in the row.
        const int64_t offset = j - g.pl;
        const int64_t xs = offset >= 0 ? 0 : (-offset + g.sw - 1) / g.sw;
        const int64_t xe = std::min(
            g.ow, g.w - 1 - offset < 0 ? 0 : (g.w - 1 - offset) / g.sw + 1);
        if (g.sw == 1) {
          for (int64_t x = xs; x < xe; ++x) {
            const float v = irow[x + offset], o = orow[x];
            orow[x] = (v > o || v != v) ? v : o;
          }
        } else {
          for (int64_t x = xs; x < xe; ++x) {
            const float v = irow[x * g.sw + offset], o = orow[x];
            orow[x] = (v > o || v != v) ? v : o;
          }
        }
      }
    }
  }
}

template <PoolKind kKind>
class PoolKernel final : public OpKernel {
 public:
  struct Attrs {
    std::vector<int64_t> kernel;
    Conv2DParams window;  // strides and pads
    bool include_pad = false;
    DataFormat format = DataFormat::kNchw;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    const AttrMap& attrs = node.attrs();
    Attrs a;
    ASSIGN_OR_RETURN(a.kernel, attrs.GetIntList("kernel_shape"));
    Conv2DParams& p = a.window;
    ASSIGN_OR_RETURN(p.strides, attrs.GetIntList("strides"));
    ASSIGN_OR_RETURN(p.pads, attrs.GetIntList("pads"));
    RETURN_IF_ERROR(::sluice::CheckConv2DParams(p));
    ASSIGN_OR_RETURN(a.format, GetDataFormat(attrs));
    if constexpr (kKind == PoolKind::kAvg) {
      ASSIGN_OR_RETURN(a.include_pad, attrs.GetBool("count_include_pad"));
    }
    const std::vector<int64_t>& kernel = a.kernel;
    if (kernel.size() != 2 || kernel[0] < 1 || kernel[1] < 1) {
      return absl::InvalidArgumentError("kernel_shape must be two sizes >= 1");
    }
    // A window wholly inside the padding would have no input cells.
    if (p.pads[0] >= kernel[0] || p.pads[2] >= kernel[0] ||
        p.pads[1] >= kernel[1] || p.pads[3] >= kernel[1]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pads [", p.pads[0], ",", p.pads[1], ",", p.pads[2], ",", p.pads[3],
          "] must be smaller than kernel_shape [", kernel[0], ",", kernel[1],
          "]"));
    }
    return a;
  }
  PoolKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    RETURN_IF_ERROR(CheckDtype(x, DT_FLOAT, "input"));
    RETURN_IF_ERROR(CheckRank(x, 4, "pooling input"));
    if (attrs_.format == DataFormat::kNhwc) {
      ASSIGN_OR_RETURN(Shape shape, ::sluice::PoolShape(NhwcToNchw(x.shape()),
                                                        attrs_.kernel,
                                                        attrs_.window));
      ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, NchwToNhwc(shape)));
      if (y->NumElements() == 0) return absl::OkStatus();
      PoolNhwc(*ctx, x, y);
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(Shape shape,
                     ::sluice::PoolShape(x.shape(), attrs_.kernel, attrs_.window));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    if (y->NumElements() == 0) return absl::OkStatus();
    PoolNchw(*ctx, x, y);
    return absl::OkStatus();
  }

 private:
  // Channels an NHWC window accumulates in registers at a time.
  static constexpr int kRun = 32;
  static constexpr float kInit = kKind == PoolKind::kMax ? -INFINITY : 0.0f;
  // One window cell's value v into the running max (NaN propagates) or sum.
  static float Step(float acc, float v) {
    if constexpr (kKind == PoolKind::kMax) {
      return (v > acc || v != v) ? v : acc;
    } else {
      return acc + v;
    }
  }

  // NHWC x pooled into y (allocated, [N,OH,OW,C]): one task per output
  // row; each output cell accumulates its window's cells kRun channels at a
  // time (contiguous floats, a loop the compiler vectorises), in the same
  // order as PoolPlane, so the result is PoolNchw's bit for bit.
  void PoolNhwc(const OpKernelContext& ctx, const Tensor& x, Tensor* y) const {
    const std::vector<int64_t>& kernel = attrs_.kernel;
    const Conv2DParams& p = attrs_.window;
    const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), c = x.dim(3);
    const int64_t oh = y->dim(1), ow = y->dim(2);
    const int64_t kh = kernel[0], kw = kernel[1];
    const int64_t sh = p.strides[0], sw = p.strides[1];
    const int64_t pt = p.pads[0], pl = p.pads[1], pb = p.pads[2],
                  pr = p.pads[3];
    const bool include_pad = attrs_.include_pad;
    const float* in = x.data<float>();
    float* out = y->data<float>();
    ParallelFor(ctx, n * oh, static_cast<double>(ow * kh * kw * c),
                [=](int64_t b, int64_t e) {
      for (int64_t row = b; row < e; ++row) {
        const int64_t img = row / oh, oy = row % oh;
        const float* image = in + img * h * w * c;
        const int64_t y0 = oy * sh - pt;
        const int64_t ys = std::max<int64_t>(y0, 0);
        const int64_t ye = std::min(y0 + kh, h);
        const int64_t y1 = std::min(y0 + kh, h + pb);
        for (int64_t ox = 0; ox < ow; ++ox) {
          float* acc = out + (row * ow + ox) * c;
          const int64_t x0 = ox * sw - pl;
          const int64_t xs = std::max<int64_t>(x0, 0);
          const int64_t xe = std::min(x0 + kw, w);
          // Runs of kRun channels held in registers across the window's
          // cells (one store a run, not one a cell); the rest one by one.
          int64_t ch0 = 0;
          for (; ch0 + kRun <= c; ch0 += kRun) {
            float run[kRun];
            for (int j = 0; j < kRun; ++j) run[j] = kInit;
            for (int64_t iy = ys; iy < ye; ++iy) {
              for (int64_t ix = xs; ix < xe; ++ix) {
                const float* v = image + (iy * w + ix) * c + ch0;
                for (int j = 0; j < kRun; ++j) run[j] = Step(run[j], v[j]);
              }
            }
            std::copy(run, run + kRun, acc + ch0);
          }
          std::fill(acc + ch0, acc + c, kInit);
          for (int64_t iy = ys; iy < ye && ch0 < c; ++iy) {
            for (int64_t ix = xs; ix < xe; ++ix) {
              const float* v = image + (iy * w + ix) * c;
              for (int64_t ch = ch0; ch < c; ++ch) {
                acc[ch] = Step(acc[ch], v[ch]);
              }
            }
          }
          if constexpr (kKind == PoolKind::kAvg) {
            const int64_t x1 = std::min(x0 + kw, w + pr);
            const int64_t cells = include_pad ? (y1 - y0) * (x1 - x0)
                                              : (ye - ys) * (xe - xs);
            for (int64_t ch = 0; ch < c; ++ch) {
              acc[ch] = cells > 0 ? acc[ch] / static_cast<float>(cells) : 0.0f;
            }
          }
        }
      }
    });
  }

  // NCHW x pooled into y (allocated, [N,C,OH,OW]).
  void PoolNchw(const OpKernelContext& ctx, const Tensor& x, Tensor* y) const {
    const std::vector<int64_t>& kernel = attrs_.kernel;
    const Conv2DParams& p = attrs_.window;
    const Shape& shape = y->shape();
    const bool include_pad = attrs_.include_pad;
    const PoolGeometry g{x.dim(2),     x.dim(3),     kernel[0],    kernel[1],
                         shape.dim(2), shape.dim(3), p.strides[0], p.strides[1],
                         p.pads[0],    p.pads[1],    p.pads[2],    p.pads[3]};
    const float* in = x.data<float>();
    float* out = y->data<float>();
    const int64_t in_plane = g.h * g.w, out_plane = g.oh * g.ow;
    ParallelFor(ctx, x.dim(0) * x.dim(1),
                static_cast<double>(out_plane * g.kh * g.kw),
                [=](int64_t b, int64_t e) {
                  for (int64_t c = b; c < e; ++c) {
                    if constexpr (kKind == PoolKind::kMax) {
                      MaxPoolPlane(in + c * in_plane, out + c * out_plane, g);
                    } else {
                      PoolPlane<kKind>(in + c * in_plane, out + c * out_plane,
                                       g, include_pad);
                    }
                  }
                });
  }

  const Attrs attrs_;
};

class GlobalAvgPoolKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    RETURN_IF_ERROR(CheckDtype(x, DT_FLOAT, "input"));
    RETURN_IF_ERROR(CheckRank(x, 4, "GlobalAvgPool input"));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(
                                     0, Shape({x.dim(0), x.dim(1), 1, 1})));
    const int64_t plane = x.dim(2) * x.dim(3);
    const float* in = x.data<float>();
    float* out = y->data<float>();
    ParallelFor(*ctx, y->NumElements(), static_cast<double>(plane),
                [=](int64_t b, int64_t e) {
                  for (int64_t c = b; c < e; ++c) {
                    double sum = 0;
                    for (int64_t i = 0; i < plane; ++i) sum += in[c * plane + i];
                    out[c] = static_cast<float>(sum / static_cast<double>(plane));
                  }
                });
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterPoolKernels(KernelRegistry* r) {
  r->Register(CpuKernel("MaxPool", {{"T", CpuNnTypes()}},
                        MakeKernel<PoolKernel<PoolKind::kMax>>));
  r->Register(CpuKernel("AvgPool", {{"T", CpuNnTypes()}},
                        MakeKernel<PoolKernel<PoolKind::kAvg>>));
  r->Register(CpuKernel("GlobalAvgPool", {{"T", CpuNnTypes()}},
                        MakeKernel<GlobalAvgPoolKernel>));
}

}  // namespace sluice::cpu
