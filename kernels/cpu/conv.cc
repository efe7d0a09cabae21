// Conv2D, NCHW, with strides, pads, dilations and groups: for each image
// and group, im2col into a scratch tensor, then one GEMM
// (filter [O/g, C/g*KH*KW] x columns [C/g*KH*KW, OH*OW]). A 1x1 convolution
// with unit strides and no padding skips im2col. FusedConv2D adds the bias
// (and side input) and applies its activation in one pass after the GEMMs.
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

// Conv2D of x and f into a new output 0 of the kernel's context.
absl::StatusOr<Tensor*> ConvInto(OpKernelContext* ctx, const Conv2DParams& p) {
  RETURN_IF_ERROR(CheckHostInputs(*ctx));
  const Tensor& x = ctx->input(0);
  const Tensor& f = ctx->input(1);
  RETURN_IF_ERROR(CheckDtype(x, DT_FLOAT, "input"));
  RETURN_IF_ERROR(CheckDtype(f, DT_FLOAT, "filter"));
  RETURN_IF_ERROR(CheckRank(x, 4, "Conv2D input"));
  RETURN_IF_ERROR(CheckRank(f, 4, "Conv2D filter"));
  ASSIGN_OR_RETURN(Shape shape, ::sluice::Conv2DShape(x.shape(), f.shape(), p));
  const int64_t groups = p.group;
  ConvGeometry g{x.dim(1) / groups, x.dim(2), x.dim(3), f.dim(2), f.dim(3),
                 shape.dim(2), shape.dim(3), p.strides[0], p.strides[1],
                 p.dilations[0], p.dilations[1], p.pads[0], p.pads[1]};
  // Conv2DShape checked these; the loops below rely on them.
  if (x.dim(1) != g.c * groups || f.dim(1) != g.c || f.dim(0) % groups != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Conv2D channels do not match: input ", x.shape().DebugString(),
        ", filter ", f.shape().DebugString(), ", group ", groups));
  }
  ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
  if (y->NumElements() == 0) return y;
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
  return y;
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
    return ConvInto(ctx, params_).status();
  }

 private:
  const Conv2DParams params_;
};

struct FusedConvAttrs {
  Conv2DParams conv;
  bool relu = false;
};

// FusedConv2D: the convolution, then y = act(y + bias[o] (+ side)) in place,
// one pass over the output.
class FusedConv2DKernel final : public OpKernel {
 public:
  using Attrs = FusedConvAttrs;
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    FusedConvAttrs a;
    ASSIGN_OR_RETURN(a.conv, ReadParams(node.attrs()));
    ASSIGN_OR_RETURN(std::string act, node.attrs().GetString("activation"));
    a.relu = act == "relu";
    return a;
  }
  FusedConv2DKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    const Tensor& bias = ctx->input(2);
    RETURN_IF_ERROR(CheckDtype(bias, DT_FLOAT, "bias"));
    const Tensor* side = ctx->num_inputs() > 3 ? &ctx->input(3) : nullptr;
    if (side != nullptr) RETURN_IF_ERROR(CheckDtype(*side, DT_FLOAT, "side"));
    ASSIGN_OR_RETURN(Tensor * y, ConvInto(ctx, attrs_.conv));
    const int64_t channels = y->shape().dim(1);
    if (bias.NumElements() != channels ||
        (side != nullptr && !(side->shape() == y->shape()))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FusedConv2D: bias ", bias.shape().DebugString(), " must have ",
          channels, " values", side == nullptr ? "" : " and side ",
          side == nullptr ? "" : side->shape().DebugString(),
          side == nullptr ? "" : " the output's shape ",
          side == nullptr ? "" : y->shape().DebugString()));
    }
    if (y->NumElements() == 0) return absl::OkStatus();
    const int64_t spatial = y->shape().dim(2) * y->shape().dim(3);
    const int64_t planes = y->shape().dim(0) * channels;
    float* out = y->data<float>();
    const float* b = bias.data<float>();
    const float* z = side == nullptr ? nullptr : side->data<float>();
    const bool relu = attrs_.relu;
    ParallelFor(*ctx, planes, static_cast<double>(spatial),
                [&](int64_t begin, int64_t end) {
                  for (int64_t plane = begin; plane < end; ++plane) {
                    const float bv = b[plane % channels];
                    float* row = out + plane * spatial;
                    const float* zrow = z == nullptr ? nullptr : z + plane * spatial;
                    for (int64_t i = 0; i < spatial; ++i) {
                      float v = row[i] + bv;
                      if (zrow != nullptr) v += zrow[i];
                      row[i] = relu && v < 0.0f ? 0.0f : v;
                    }
                  }
                });
    return absl::OkStatus();
  }

 private:
  const FusedConvAttrs attrs_;
};

}  // namespace

void RegisterConvKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Conv2D", {{"T", CpuNnTypes()}},
                        MakeKernel<Conv2DKernel>));
  r->Register(CpuKernel("FusedConv2D", {{"T", CpuNnTypes()}},
                        MakeKernel<FusedConv2DKernel>));
}

}  // namespace sluice::cpu
