// Conv2D, NCHW, with strides, pads, dilations and groups: for each image
// and group, one GEMM (filter [O/g, C/g*KH*KW] x columns [C/g*KH*KW, OH*OW])
// cut into tiles over the intra-op pool, the columns an im2col that each
// tile builds for itself where it can (GemmFilled in gemm.h). Three paths
// skip im2col: a 1x1 convolution with unit strides and no padding (the
// input is the columns); a stride-1 convolution with no more output
// channels than positions (ShiftedConv: one GEMM per filter tap on the
// padded input read in place, accumulated); and a depthwise one (one
// channel in and out per group), which sums its windows directly on a
// zero-padded copy of each plane, one task per plane. FusedConv2D adds the
// bias (and side input) and applies its activation on each GEMM tile (or
// depthwise plane) right after it is computed, on the same thread, while
// it is in cache. Where oneDNN is built in, float32 convolutions run on its
// convolution primitive instead (onednn_conv.h) unless it declines the
// shape; these loops stay the reference and the fallback. An NHWC node
// (data_format, graph/data_format.h) runs the same code between
// permutations (layout.h): input and side to NCHW, the filter from
// [O,KH,KW,I] to [O,I,KH,KW], the output back.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/data_format.h"
#include "graph/shape_fns.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/conv_activation.h"
#include "kernels/cpu/cpu_provider.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/layout.h"
#include "kernels/cpu/onednn_conv.h"
#include "kernels/cpu/onednn_conv_nhwc.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/row_copy.h"
#include "kernels/cpu/sgemm.h"

namespace sluice::cpu {
namespace {

struct ConvGeometry {
  int64_t c, h, w;       // input channels per group, height, width
  int64_t kh, kw;        // kernel
  int64_t oh, ow;        // output
  int64_t sh, sw, dh, dw, pt, pl;
};

// FusedConv2D's epilogue: y = act(y + bias[o] (+ side)). `side` is null when
// there is none; both are borrowed from the kernel's inputs.
struct ConvEpilogue {
  const float* bias = nullptr;  // [O]
  const float* side = nullptr;  // the output's shape, or null
  ConvActivation activation = ConvActivation::kNone;

  // Applies it to output channel `channel`'s elements [begin, end) of the
  // plane at `offset` (in elements) of the output `y`.
  void Apply(float* y, int64_t offset, int64_t channel, int64_t begin,
             int64_t end) const {
    const float bv = bias[channel];
    float* row = y + offset;
    const float* zrow = side == nullptr ? nullptr : side + offset;
    for (int64_t i = begin; i < end; ++i) {
      float v = row[i] + bv;
      if (zrow != nullptr) v += zrow[i];
      row[i] = ApplyConvActivation(activation, v);
    }
  }
};

// The output columns [begin, end) whose input column x*stride + offset is
// inside [0, width): the rest of an im2col row reads padding.
void InsideColumns(int64_t ow, int64_t stride, int64_t offset, int64_t width,
                   int64_t* begin, int64_t* end) {
  // x*stride + offset >= 0 and x*stride + offset <= width - 1.
  *begin = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  *end = width - 1 - offset < 0 ? 0 : (width - 1 - offset) / stride + 1;
  *begin = std::min(*begin, ow);
  *end = std::clamp(*end, *begin, ow);
}

// col[(ci*kh + i)*kw + j][y*ow + x] = in[ci][y*sh - pt + i*dh][x*sw - pl + j*dw]
// (0 outside the image) for rows [r0, r1) and columns [c0, c1) of col
// (columns are output positions y*ow + x). `in` is one group of one image.
// Each output row's part is zeros, a copy (strided when sw > 1), zeros.
void Im2ColBlock(const float* in, const ConvGeometry& g, int64_t r0,
                 int64_t r1, int64_t c0, int64_t c1, float* col) {
  const int64_t spatial = g.oh * g.ow;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t ci = r / (g.kh * g.kw);
    const int64_t i = (r / g.kw) % g.kh, j = r % g.kw;
    const float* plane = in + ci * g.h * g.w;
    float* dst = col + r * spatial;
    const int64_t offset = j * g.dw - g.pl;
    int64_t x0 = 0, x1 = 0;
    InsideColumns(g.ow, g.sw, offset, g.w, &x0, &x1);
    for (int64_t c = c0; c < c1;) {
      const int64_t y = c / g.ow, xa = c % g.ow;
      const int64_t xb = std::min(g.ow, xa + (c1 - c));
      c += xb - xa;
      float* drow = dst + y * g.ow;
      const int64_t iy = y * g.sh - g.pt + i * g.dh;
      if (iy < 0 || iy >= g.h) {
        ZeroRow(drow + xa, xb - xa);
        continue;
      }
      const float* srow = plane + iy * g.w;
      const int64_t lo = std::clamp(x0, xa, xb), hi = std::clamp(x1, lo, xb);
      ZeroRow(drow + xa, lo - xa);
      if (g.sw == 1) {
        CopyRow(srow + lo + offset, hi - lo, drow + lo);
      } else {
        for (int64_t x = lo; x < hi; ++x) drow[x] = srow[x * g.sw + offset];
      }
      ZeroRow(drow + hi, xb - hi);
    }
  }
}

// One depthwise plane from its zero-padded input `pad` (rows wp apart):
// out[oy][ox] = sum over taps of k[i][j] * pad[oy*sh + i*dh][ox*sw + j*dw].
// With the window and stride known at compile time (KH, KW, SW > 0; unit
// dilation) the taps unroll, the filter stays in registers and the loop
// over ox vectorises; otherwise (0) they are read from g.
template <int KH, int KW, int SW>
void DepthwisePlane(const float* pad, int64_t wp, const float* k,
                    const ConvGeometry& g, float* out) {
  const int64_t kh = KH > 0 ? KH : g.kh, kw = KW > 0 ? KW : g.kw;
  const int64_t sw = SW > 0 ? SW : g.sw;
  const int64_t dh = KH > 0 ? 1 : g.dh, dw = KW > 0 ? 1 : g.dw;
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    const float* rows = pad + oy * g.sh * wp;
    float* orow = out + oy * g.ow;
    for (int64_t ox = 0; ox < g.ow; ++ox) {
      const float* at = rows + ox * sw;
      float s = 0.0f;
      for (int64_t i = 0; i < kh; ++i) {
        for (int64_t j = 0; j < kw; ++j) {
          s += k[i * kw + j] * at[i * dh * wp + j * dw];
        }
      }
      orow[ox] = s;
    }
  }
}

// DepthwisePlane<3, 3, 1> over the plane as one flat loop: output (oy, ox)
// is flat position q = oy*wp + ox, and its window reads pad[q + i*wp + j],
// so one loop over q = 0 .. (oh-1)*wp + ow - 1 vectorises without a
// remainder per row (at 14x14, a row is under two vectors); the wp - ow
// positions past each row's end are junk and are dropped in the copy to
// `out`. `acc` holds (oh-1)*wp + ow floats.
void Depthwise3x3Flat(const float* __restrict pad, int64_t wp,
                      const float* k, const ConvGeometry& g,
                      float* __restrict acc, float* __restrict out) {
  const int64_t len = (g.oh - 1) * wp + g.ow;
  const float k0 = k[0], k1 = k[1], k2 = k[2], k3 = k[3], k4 = k[4],
              k5 = k[5], k6 = k[6], k7 = k[7], k8 = k[8];
  const float* r0 = pad;
  const float* r1 = pad + wp;
  const float* r2 = pad + 2 * wp;
  for (int64_t q = 0; q < len; ++q) {
    acc[q] = k0 * r0[q] + k1 * r0[q + 1] + k2 * r0[q + 2] + k3 * r1[q] +
             k4 * r1[q + 1] + k5 * r1[q + 2] + k6 * r2[q] + k7 * r2[q + 1] +
             k8 * r2[q + 2];
  }
  for (int64_t oy = 0; oy < g.oh; ++oy) {
    CopyRow(acc + oy * wp, g.ow, out + oy * g.ow);
  }
}

// A depthwise convolution (one input channel per group, one output per
// group, as MobileNet's): each output plane sums its own input plane's
// window directly. One task per (image, channel) plane; no im2col, no
// GEMM of one row. Each plane is first copied into a zero-padded buffer,
// so the sums test no bounds; 3x3 windows at stride 1 take one flat
// vectorised loop over the plane, at stride 2 an unrolled one per row.
// x is [planes / channels, channels, h, w], f is [channels, 1, kh, kw];
// g's sizes are one plane's.
void Depthwise(const OpKernelContext& ctx, const float* x, const float* f,
               int64_t planes, int64_t channels, const ConvGeometry& g,
               const Conv2DParams& p, const ConvEpilogue* epilogue, float* y) {
  const int64_t in_plane = g.h * g.w, out_plane = g.oh * g.ow;
  // The padded plane holds every position a window reads: rows up to
  // (oh-1)*sh + (kh-1)*dh, columns up to (ow-1)*sw + (kw-1)*dw.
  const int64_t hp = (g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1;
  const int64_t wp = (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1;
  const bool three = g.kh == 3 && g.kw == 3 && g.dh == 1 && g.dw == 1;
  const bool flat = three && g.sh == 1 && g.sw == 1;
  auto plane_fn = three && g.sw == 1   ? &DepthwisePlane<3, 3, 1>
                  : three && g.sw == 2 ? &DepthwisePlane<3, 3, 2>
                                       : &DepthwisePlane<0, 0, 0>;
  ParallelFor(ctx, planes, static_cast<double>(out_plane * g.kh * g.kw),
              [&](int64_t begin, int64_t end) {
    std::vector<float> pad(hp * wp);
    std::vector<float> acc(flat ? (g.oh - 1) * wp + g.ow : 0);
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* in = x + plane * in_plane;
      // pad[r][c] = in[r - pt][c - pl], zero outside the image.
      for (int64_t r = 0; r < hp; ++r) {
        float* prow = pad.data() + r * wp;
        const int64_t iy = r - p.pads[0];
        if (iy < 0 || iy >= g.h) {
          std::fill(prow, prow + wp, 0.0f);
          continue;
        }
        const int64_t c0 = std::clamp<int64_t>(p.pads[1], 0, wp);
        const int64_t c1 = std::clamp<int64_t>(p.pads[1] + g.w, c0, wp);
        const float* irow = in + iy * g.w - p.pads[1];
        ZeroRow(prow, c0);
        CopyRow(irow + c0, c1 - c0, prow + c0);
        ZeroRow(prow + c1, wp - c1);
      }
      const float* k = f + (plane % channels) * g.kh * g.kw;
      if (flat) {
        Depthwise3x3Flat(pad.data(), wp, k, g, acc.data(),
                         y + plane * out_plane);
      } else {
        plane_fn(pad.data(), wp, k, g, y + plane * out_plane);
      }
      if (epilogue != nullptr) {
        epilogue->Apply(y, plane * out_plane, plane % channels, 0, out_plane);
      }
    }
  });
}

// A stride-1 convolution without im2col ("shifted GEMMs"). On the input
// padded to hp x wp (copied only when there are pads), output (y, x) of
// filter tap (i, j) reads padded element (y + i*dh)*wp + x + j*dw: over the
// flattened positions q = y*wp + x each tap is one GEMM of the tap's filter
// slice [og, c] with the padded input shifted by i*dh*wp + j*dw, read in
// place as a [c, cols] matrix with rows hp*wp apart. The kh*kw taps
// accumulate into one [og, cols] product, cols = (oh-1)*wp + ow, whose
// columns with x >= ow are wrap-around junk and are dropped when each tile
// is copied into the output (with the epilogue). The filter is regrouped
// by tap ([group][tap][og][c]) once per call, which costs less than an
// im2col when og <= oh*ow (UseShifted).
bool UseShifted(const ConvGeometry& g, int64_t og, const Conv2DParams& p) {
  const int64_t wp = g.w + p.pads[1] + p.pads[3];
  return g.sh == 1 && g.sw == 1 && g.kh * g.kw > 1 && og <= g.oh * g.ow &&
         4 * wp <= 5 * g.ow;  // at most a fifth of the columns are junk
}

absl::Status ShiftedConv(OpKernelContext* ctx, const Tensor& x,
                         const Tensor& f, const Conv2DParams& p,
                         const ConvGeometry& g, int64_t groups, int64_t og,
                         const ConvEpilogue* epilogue, float* out) {
  const int64_t hp = g.h + p.pads[0] + p.pads[2];
  const int64_t wp = g.w + p.pads[1] + p.pads[3];
  const bool padded = hp != g.h || wp != g.w;
  const int64_t taps = g.kh * g.kw;
  const int64_t cols = (g.oh - 1) * wp + g.ow;
  const int64_t spatial = g.oh * g.ow;
  ASSIGN_OR_RETURN(Tensor wt, ctx->allocate_temp(DT_FLOAT, f.shape()));
  ASSIGN_OR_RETURN(Tensor acc, ctx->allocate_temp(DT_FLOAT, Shape({og, cols})));
  Tensor xp;
  if (padded) {
    ASSIGN_OR_RETURN(xp, ctx->allocate_temp(DT_FLOAT, Shape({g.c, hp, wp})));
  }
  // wt[gi][t][o][ci] = f[gi*og + o][ci][t].
  const float* fd = f.data<float>();
  float* wd = wt.data<float>();
  ParallelFor(*ctx, groups * og, static_cast<double>(g.c * taps),
              [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t gi = row / og, o = row % og;
      const float* src = fd + row * g.c * taps;
      for (int64_t t = 0; t < taps; ++t) {
        float* dst = wd + ((gi * taps + t) * og + o) * g.c;
        for (int64_t ci = 0; ci < g.c; ++ci) dst[ci] = src[ci * taps + t];
      }
    }
  });
  const auto* pool = ctx->device()->eigen_cpu_device();
  GemmGrid grid = PlanGemmGrid(og, cols, g.c * taps, PoolThreads(pool));
  // Keep one tap's columns of the input (c x col_step) within about half a
  // core's L2 cache, so the taps after the first read them from there.
  const int64_t max_cols = std::max<int64_t>(
      64, kGemmFillBytes / (g.c * static_cast<int64_t>(sizeof(float))));
  if (grid.col_step > max_cols) {
    grid.col_step = max_cols;
    grid.col_tiles = (cols + max_cols - 1) / max_cols;
  }
  float* ad = acc.data<float>();
  for (int64_t n = 0; n < x.dim(0); ++n) {
    for (int64_t gi = 0; gi < groups; ++gi) {
      const float* in = x.data<float>() + (n * x.dim(1) + gi * g.c) * g.h * g.w;
      if (padded) {
        float* xpd = xp.data<float>();
        ParallelFor(*ctx, g.c, static_cast<double>(hp * wp),
                    [&](int64_t begin, int64_t end) {
          for (int64_t ci = begin; ci < end; ++ci) {
            float* dst = xpd + ci * hp * wp;
            const float* src = in + ci * g.h * g.w;
            std::fill(dst, dst + p.pads[0] * wp, 0.0f);
            for (int64_t yy = 0; yy < g.h; ++yy) {
              float* row = dst + (p.pads[0] + yy) * wp;
              ZeroRow(row, p.pads[1]);
              CopyRow(src + yy * g.w, g.w, row + p.pads[1]);
              ZeroRow(row + p.pads[1] + g.w, wp - p.pads[1] - g.w);
            }
            std::fill(dst + (p.pads[0] + g.h) * wp, dst + hp * wp, 0.0f);
          }
        });
        in = xpd;
      }
      const int64_t first = n * groups * og + gi * og;  // output planes
      RunBlocks(pool, grid.tiles(), [&](int64_t index) {
        const int64_t r0 = (index / grid.col_tiles) * grid.row_step;
        const int64_t r1 = std::min(og, r0 + grid.row_step);
        const int64_t c0 = (index % grid.col_tiles) * grid.col_step;
        const int64_t c1 = std::min(cols, c0 + grid.col_step);
        for (int64_t t = 0; t < taps; ++t) {
          const int64_t shift = (t / g.kw) * g.dh * wp + (t % g.kw) * g.dw;
          Sgemm(false, false, r1 - r0, c1 - c0, g.c,
                wd + ((gi * taps + t) * og + r0) * g.c, g.c,
                in + shift + c0, hp * wp, ad + r0 * cols + c0, cols,
                /*accumulate=*/t > 0);
        }
        // Copy the tile's columns that are output positions into y, one
        // image row at a time, then apply the epilogue to what was copied.
        for (int64_t r = r0; r < r1; ++r) {
          float* plane = out + (first + r) * spatial;
          const float* src = ad + r * cols;
          for (int64_t q = c0; q < c1;) {
            const int64_t yy = q / wp, xa = q % wp;
            const int64_t xb = std::min(wp, xa + (c1 - q));
            q += xb - xa;
            const int64_t x1 = std::min(xb, g.ow);
            if (xa >= x1) continue;
            CopyRow(src + yy * wp + xa, x1 - xa, plane + yy * g.ow + xa);
            if (epilogue != nullptr) {
              epilogue->Apply(out, (first + r) * spatial, gi * og + r,
                              yy * g.ow + xa, yy * g.ow + x1);
            }
          }
        }
      });
    }
  }
  return absl::OkStatus();
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

struct Conv2DAttrs {
  Conv2DParams conv;
  DataFormat format = DataFormat::kNchw;
  ConvActivation activation = ConvActivation::kNone;  // FusedConv2D
};

absl::StatusOr<Conv2DAttrs> ReadConvAttrs(const AttrMap& attrs) {
  Conv2DAttrs a;
  ASSIGN_OR_RETURN(a.conv, ReadParams(attrs));
  ASSIGN_OR_RETURN(a.format, GetDataFormat(attrs));
  return a;
}

// The output's shape in the node's format, after the checks every
// convolution makes of its input and filter.
absl::StatusOr<Shape> CheckedOutputShape(const OpKernelContext& ctx,
                                         const Conv2DAttrs& a) {
  RETURN_IF_ERROR(CheckHostInputs(ctx));
  const Tensor& x = ctx.input(0);
  const Tensor& f = ctx.input(1);
  RETURN_IF_ERROR(CheckDtype(x, DT_FLOAT, "input"));
  RETURN_IF_ERROR(CheckDtype(f, DT_FLOAT, "filter"));
  RETURN_IF_ERROR(CheckRank(x, 4, "Conv2D input"));
  RETURN_IF_ERROR(CheckRank(f, 4, "Conv2D filter"));
  if (a.format == DataFormat::kNhwc) {
    ASSIGN_OR_RETURN(Shape nchw, ::sluice::Conv2DShape(NhwcToNchw(x.shape()),
                                                       NhwcToNchw(f.shape()),
                                                       a.conv));
    return NchwToNhwc(nchw);
  }
  return ::sluice::Conv2DShape(x.shape(), f.shape(), a.conv);
}

absl::Status ConvCompute(OpKernelContext* ctx, const Tensor& x,
                         const Tensor& f, const Conv2DParams& p,
                         const ConvEpilogue* epilogue, OneDnnConv* onednn,
                         const Tensor* side, Tensor* y);

// Conv2D of inputs 0 and 1 into a new output 0 of the kernel's context,
// then the epilogue when one is given (`side` is input 3 or null; the
// epilogue's side pointer is set here). On `onednn` when it is given, the
// device's provider allows it (CpuProviderOptions::convolutions) and it
// takes the shape. NHWC: on `onednn_nhwc` (channels last in place) on the
// same terms, else the NCHW computation between permutations.
absl::Status ConvInto(OpKernelContext* ctx, const Conv2DAttrs& a,
                      const ConvEpilogue* epilogue, OneDnnConv* onednn,
                      OneDnnConvNhwc* onednn_nhwc, const Tensor* side) {
  ASSIGN_OR_RETURN(Shape shape, CheckedOutputShape(*ctx, a));
  ConvEpilogue ep;
  if (epilogue != nullptr) ep = *epilogue;
  if (a.format == DataFormat::kNchw) {
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
    if (y->NumElements() == 0) return absl::OkStatus();
    if (epilogue != nullptr && side != nullptr) ep.side = side->data<float>();
    return ConvCompute(ctx, ctx->input(0), ctx->input(1), a.conv,
                       epilogue == nullptr ? nullptr : &ep, onednn, side, y);
  }
  ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, shape));
  if (y->NumElements() == 0) return absl::OkStatus();
  if (onednn_nhwc != nullptr && ctx->input(0).dtype() == DT_FLOAT &&
      CpuProviderOf(ctx->device()).RunsNhwcConvolutionsOnOneDnn()) {
    ASSIGN_OR_RETURN(bool ran,
                     onednn_nhwc->Compute(ctx, ctx->input(0), ctx->input(1),
                                          epilogue == nullptr ? nullptr
                                                              : epilogue->bias,
                                          side, y));
    if (ran) return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(Tensor x, PermutedTemp(ctx, ctx->input(0), kNhwcToNchw));
  // [O,KH,KW,I] -> [O,I,KH,KW] is the same permutation.
  ASSIGN_OR_RETURN(Tensor f, PermutedTemp(ctx, ctx->input(1), kNhwcToNchw));
  Tensor side_nchw;
  if (side != nullptr) {
    ASSIGN_OR_RETURN(side_nchw, PermutedTemp(ctx, *side, kNhwcToNchw));
    ep.side = side_nchw.data<float>();
  }
  ASSIGN_OR_RETURN(Tensor out, ctx->allocate_temp(DT_FLOAT, NhwcToNchw(shape)));
  RETURN_IF_ERROR(ConvCompute(ctx, x, f, a.conv,
                              epilogue == nullptr ? nullptr : &ep, onednn,
                              side == nullptr ? nullptr : &side_nchw, &out));
  PermuteInto(*ctx, out, kNchwToNhwc, *y);
  return absl::OkStatus();
}

// Conv2D of NCHW x and f into y ([N,O,OH,OW], allocated), then the
// epilogue when one is given (`side` is the tensor epilogue->side points
// into).
absl::Status ConvCompute(OpKernelContext* ctx, const Tensor& x,
                         const Tensor& f, const Conv2DParams& p,
                         const ConvEpilogue* epilogue, OneDnnConv* onednn,
                         const Tensor* side, Tensor* y) {
  const Shape& shape = y->shape();
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
  const int64_t og = f.dim(0) / groups;
  const CpuConvPath path =
      CpuProviderOf(ctx->device()).options().convolutions;
  if (onednn != nullptr && path != CpuConvPath::kLoops &&
      (path == CpuConvPath::kOneDnn ||
       PreferOneDnn(g.kh, g.kw, g.oh, g.ow, g.c, og, groups, x.dim(0),
                    PoolThreads(ctx->device()->eigen_cpu_device())))) {
    ASSIGN_OR_RETURN(bool ran, onednn->Compute(ctx, x, f,
                                               epilogue == nullptr
                                                   ? nullptr
                                                   : epilogue->bias,
                                               side, y));
    if (ran) return absl::OkStatus();
  }
  if (g.c == 1 && og == 1) {  // depthwise: one channel in and out per group
    Depthwise(*ctx, x.data<float>(), f.data<float>(), x.dim(0) * groups,
              groups, g, p, epilogue, y->data<float>());
    return absl::OkStatus();
  }
  if (UseShifted(g, og, p)) {
    RETURN_IF_ERROR(ShiftedConv(ctx, x, f, p, g, groups, og, epilogue,
                                y->data<float>()));
    return absl::OkStatus();
  }
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
  float* out = y->data<float>();
  for (int64_t n = 0; n < x.dim(0); ++n) {
    for (int64_t gi = 0; gi < groups; ++gi) {
      const float* in = x.data<float>() + (n * x.dim(1) + gi * g.c) * g.h * g.w;
      const float* filter = f.data<float>() + gi * og * k;
      // Rows of this GEMM are output channels gi*og + row of image n.
      const int64_t first = n * f.dim(0) + gi * og;  // in planes of y
      auto finish = [&](const GemmTile& t) {
        if (epilogue == nullptr) return;
        for (int64_t r = t.row_begin; r < t.row_end; ++r) {
          epilogue->Apply(out, (first + r) * spatial, gi * og + r, t.col_begin,
                          t.col_end);
        }
      };
      if (direct) {
        Gemm<float>(pool, filter, in, out + first * spatial, og, spatial, k,
                    false, false, finish);
      } else {
        GemmFilled<float>(
            pool, filter, col.data<float>(), out + first * spatial, og,
            spatial, k, false,
            [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
              Im2ColBlock(in, g, r0, r1, c0, c1, col.data<float>());
            },
            finish);
      }
    }
  }
  return absl::OkStatus();
}

// The channels-last oneDNN path of a node, for data_format NHWC only.
std::unique_ptr<OneDnnConvNhwc> MaybeNhwc(const Conv2DAttrs& a,
                                          ConvActivation act) {
  if (a.format != DataFormat::kNhwc) return nullptr;
  return OneDnnConvNhwc::Create(a.conv, act);
}

class Conv2DKernel final : public OpKernel {
 public:
  using Attrs = Conv2DAttrs;
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    return ReadConvAttrs(node.attrs());
  }
  Conv2DKernel(const Node& node, Attrs attrs)
      : OpKernel(node),
        attrs_(std::move(attrs)),
        onednn_(OneDnnConv::Create(attrs_.conv, ConvActivation::kNone)),
        onednn_nhwc_(MaybeNhwc(attrs_, ConvActivation::kNone)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    return ConvInto(ctx, attrs_, nullptr, onednn_.get(), onednn_nhwc_.get(),
                    nullptr);
  }

 private:
  const Conv2DAttrs attrs_;
  // nullptr: the loops here (no oneDNN in this build, or switched off).
  const std::unique_ptr<OneDnnConv> onednn_;
  // Only for data_format NHWC.
  const std::unique_ptr<OneDnnConvNhwc> onednn_nhwc_;
};

// FusedConv2D: the convolution with y = act(y + bias[o] (+ side)) applied
// to each tile of the output as it is computed.
class FusedConv2DKernel final : public OpKernel {
 public:
  using Attrs = Conv2DAttrs;
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    ASSIGN_OR_RETURN(Conv2DAttrs a, ReadConvAttrs(node.attrs()));
    ASSIGN_OR_RETURN(std::string act, node.attrs().GetString("activation"));
    ASSIGN_OR_RETURN(a.activation, ParseConvActivation(act));
    return a;
  }
  FusedConv2DKernel(const Node& node, Attrs attrs)
      : OpKernel(node),
        attrs_(std::move(attrs)),
        onednn_(OneDnnConv::Create(attrs_.conv, Activation(attrs_))),
        onednn_nhwc_(MaybeNhwc(attrs_, Activation(attrs_))) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& bias = ctx->input(2);
    RETURN_IF_ERROR(CheckDtype(bias, DT_FLOAT, "bias"));
    const Tensor* side = ctx->num_inputs() > 3 ? &ctx->input(3) : nullptr;
    if (side != nullptr) RETURN_IF_ERROR(CheckDtype(*side, DT_FLOAT, "side"));
    // The output's shape, to check bias and side before the convolution
    // writes anything (ConvInto checks the rest).
    ASSIGN_OR_RETURN(Shape shape, CheckedOutputShape(*ctx, attrs_));
    const int64_t channels =
        shape.dim(attrs_.format == DataFormat::kNhwc ? 3 : 1);
    if (bias.NumElements() != channels ||
        (side != nullptr && !(side->shape() == shape))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FusedConv2D: bias ", bias.shape().DebugString(), " must have ",
          channels, " values", side == nullptr ? "" : " and side ",
          side == nullptr ? "" : side->shape().DebugString(),
          side == nullptr ? "" : " the output's shape ",
          side == nullptr ? "" : shape.DebugString()));
    }
    ConvEpilogue epilogue;
    epilogue.bias = bias.data<float>();
    epilogue.activation = attrs_.activation;
    return ConvInto(ctx, attrs_, &epilogue, onednn_.get(), onednn_nhwc_.get(),
                    side);
  }

 private:
  static ConvActivation Activation(const Conv2DAttrs& a) {
    return a.activation;
  }

  const Conv2DAttrs attrs_;
  // nullptr: the loops here (no oneDNN in this build, or switched off).
  const std::unique_ptr<OneDnnConv> onednn_;
  // Only for data_format NHWC.
  const std::unique_ptr<OneDnnConvNhwc> onednn_nhwc_;
};

}  // namespace

void RegisterConvKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Conv2D", {{"T", CpuNnTypes()}},
                        MakeKernel<Conv2DKernel>));
  r->Register(CpuKernel("FusedConv2D", {{"T", CpuNnTypes()}},
                        MakeKernel<FusedConv2DKernel>));
}

}  // namespace sluice::cpu
