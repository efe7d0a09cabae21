// Conv2D, NCHW, with strides, pads, dilations and groups: for each image
// and group, im2col into a scratch tensor, then one GEMM
// (filter [O/g, C/g*KH*KW] x columns [C/g*KH*KW, OH*OW]). A 1x1 convolution
// with unit strides and no padding skips im2col.
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

struct ConvGeometry {
  int64_t c, h, w;       // input channels per group, height, width
  int64_t kh, kw;        // kernel
  int64_t oh, ow;        // output
  int64_t sh, sw, dh, dw, pt, pl;
};

// col[(ci*kh + i)*kw + j][y*ow + x] = in[ci][y*sh - pt + i*dh][x*sw - pl + j*dw]
// (0 outside the image). `in` is one group of one image.
void Im2Col(const OpKernelContext& ctx, const float* in, const ConvGeometry& g,
            float* col) {
  const int64_t rows = g.c * g.kh * g.kw;
  ParallelFor(ctx, rows, static_cast<double>(g.oh * g.ow),
              [&](int64_t b, int64_t e) {
                for (int64_t r = b; r < e; ++r) {
                  const int64_t ci = r / (g.kh * g.kw);
                  const int64_t i = (r / g.kw) % g.kh, j = r % g.kw;
                  const float* plane = in + ci * g.h * g.w;
                  float* dst = col + r * g.oh * g.ow;
                  for (int64_t y = 0; y < g.oh; ++y) {
                    const int64_t iy = y * g.sh - g.pt + i * g.dh;
                    float* drow = dst + y * g.ow;
                    if (iy < 0 || iy >= g.h) {
                      for (int64_t x = 0; x < g.ow; ++x) drow[x] = 0;
                      continue;
                    }
                    const float* srow = plane + iy * g.w;
                    for (int64_t x = 0; x < g.ow; ++x) {
                      const int64_t ix = x * g.sw - g.pl + j * g.dw;
                      drow[x] = (ix >= 0 && ix < g.w) ? srow[ix] : 0.0f;
                    }
                  }
                }
              });
}

absl::StatusOr<Conv2DParams> ReadParams(const AttrMap& attrs) {
  Conv2DParams p;
  ASSIGN_OR_RETURN(p.strides, attrs.GetIntList("strides"));
  ASSIGN_OR_RETURN(p.pads, attrs.GetIntList("pads"));
  ASSIGN_OR_RETURN(p.dilations, attrs.GetIntList("dilations"));
  ASSIGN_OR_RETURN(p.group, attrs.GetInt("group"));
  RETURN_IF_ERROR(::sluice::CheckConv2DParams(p));
  return p;
}

class Conv2DKernel final : public OpKernel {
 public:
  using Attrs = Conv2DParams;
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    return ReadParams(node.attrs());
  }
  Conv2DKernel(const Node& node, Attrs attrs)
      : OpKernel(node), params_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& f = ctx->input(1);
    RETURN_IF_ERROR(CheckDtype(x, DT_FLOAT, "input"));
    RETURN_IF_ERROR(CheckDtype(f, DT_FLOAT, "filter"));
    RETURN_IF_ERROR(CheckRank(x, 4, "Conv2D input"));
    RETURN_IF_ERROR(CheckRank(f, 4, "Conv2D filter"));
    const Conv2DParams& p = params_;
    ASSIGN_OR_RETURN(Shape shape,
                     ::sluice::Conv2DShape(x.shape(), f.shape(), p));
    const int64_t groups = p.group;
    ConvGeometry g{x.dim(1) / groups, x.dim(2), x.dim(3), f.dim(2), f.dim(3),
                   shape.dim(2), shape.dim(3), p.strides[0], p.strides[1],
                   p.dilations[0], p.dilations[1], p.pads[0], p.pads[1]};
    // Conv2DShape checked these; the loops below rely on them.
    if (x.dim(1) != g.c * groups || f.dim(1) != g.c ||
        f.dim(0) % groups != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Conv2D channels do not match: input ", x.shape().DebugString(),
          ", filter ", f.shape().DebugString(), ", group ", groups));
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    if (y->NumElements() == 0) return absl::OkStatus();
    const int64_t og = f.dim(0) / groups;
    const int64_t k = g.c * g.kh * g.kw;
    const int64_t spatial = g.oh * g.ow;
    const bool direct = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 &&
                        p.pads[0] == 0 && p.pads[1] == 0 && p.pads[2] == 0 &&
                        p.pads[3] == 0;
    Tensor col;
    if (!direct) {
      ASSIGN_OR_RETURN(col, ctx->allocate_temp(DT_FLOAT, Shape({k, spatial})));
    }
    const auto* pool = ctx->device()->eigen_cpu_device();
    for (int64_t n = 0; n < x.dim(0); ++n) {
      for (int64_t gi = 0; gi < groups; ++gi) {
        const float* in = x.data<float>() + (n * x.dim(1) + gi * g.c) * g.h * g.w;
        const float* cols = in;
        if (!direct) {
          Im2Col(*ctx, in, g, col.data<float>());
          cols = col.data<float>();
        }
        Gemm<float>(pool, f.data<float>() + gi * og * k, cols,
                    y->data<float>() + (n * f.dim(0) + gi * og) * spatial, og,
                    spatial, k, false, false);
      }
    }
    return absl::OkStatus();
  }

 private:
  const Conv2DParams params_;
};

}  // namespace

void RegisterConvKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Conv2D", {{"T", CpuNnTypes()}},
                        MakeKernel<Conv2DKernel>));
}

}  // namespace sluice::cpu
