// DeformConv on the CPU (kernels/cpu/deform_conv.h).
#include "kernels/cpu/deform_conv.h"

#include <cmath>
#include <vector>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("DeformConv ", what));
}

// The image plane p [h, w] at (y, x), bilinear; 0 outside (each corner
// outside counts 0), as torchvision's deform_conv2d.
template <typename C, typename T>
C Bilinear(const T* p, int64_t h, int64_t w, C y, C x) {
  if (y <= -1 || y >= h || x <= -1 || x >= w) return 0;
  const int64_t y0 = static_cast<int64_t>(std::floor(y));
  const int64_t x0 = static_cast<int64_t>(std::floor(x));
  const int64_t y1 = y0 + 1, x1 = x0 + 1;
  const C ly = y - y0, lx = x - x0, hy = 1 - ly, hx = 1 - lx;
  auto at = [&](int64_t r, int64_t c) -> C {
    return r >= 0 && r < h && c >= 0 && c < w ? static_cast<C>(p[r * w + c])
                                              : C(0);
  };
  return hy * hx * at(y0, x0) + hy * lx * at(y0, x1) + ly * hx * at(y1, x0) +
         ly * lx * at(y1, x1);
}

class DeformConvKernel final : public OpKernel {
 public:
  struct Attrs {
    std::vector<int64_t> strides, pads, dilations;
    int64_t group = 1, offset_group = 1;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.strides, node.attrs().GetIntList("strides"));
    ASSIGN_OR_RETURN(a.pads, node.attrs().GetIntList("pads"));
    ASSIGN_OR_RETURN(a.dilations, node.attrs().GetIntList("dilations"));
    ASSIGN_OR_RETURN(a.group, node.attrs().GetInt("group"));
    ASSIGN_OR_RETURN(a.offset_group, node.attrs().GetInt("offset_group"));
    if (a.strides.size() != 2 || a.pads.size() != 4 ||
        a.dilations.size() != 2) {
      return Bad("is 2-D: strides and dilations need 2 values, pads 4");
    }
    if (a.group < 1 || a.offset_group < 1) {
      return Bad("group and offset_group must be >= 1");
    }
    return a;
  }
  DeformConvKernel(const Node& node, Attrs attrs)
      : OpKernel(node), a_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& w = ctx->input(1);
    const Tensor& off = ctx->input(2);
    const Tensor& b = ctx->input(3);
    const Tensor& mask = ctx->input(4);
    if (x.rank() != 4 || w.rank() != 4 || off.rank() != 4) {
      return Bad(
          absl::StrCat("needs x [N,C,H,W], w [O,C/group,kH,kW] and "
                       "offset [N,2*offset_group*kH*kW,oH,oW]; got ",
                       x.shape().DebugString(), ", ", w.shape().DebugString(),
                       ", ", off.shape().DebugString()));
    }
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3);
    const int64_t o = w.dim(0), kh = w.dim(2), kw = w.dim(3), k = kh * kw;
    const int64_t g = a_.group, og = a_.offset_group;
    if (c % g != 0 || o % g != 0 || w.dim(1) != c / g || c % og != 0) {
      return Bad(absl::StrCat("channels: x has ", c, ", w ",
                              w.shape().DebugString(), ", group ", g,
                              ", offset_group ", og));
    }
    const int64_t oh =
        (h + a_.pads[0] + a_.pads[2] - (a_.dilations[0] * (kh - 1) + 1)) /
            a_.strides[0] +
        1;
    const int64_t ow =
        (wd + a_.pads[1] + a_.pads[3] - (a_.dilations[1] * (kw - 1) + 1)) /
            a_.strides[1] +
        1;
    if (oh < 1 || ow < 1) return Bad("window larger than the padded input");
    if (off.shape() != Shape({n, og * 2 * k, oh, ow})) {
      return Bad(absl::StrCat("offset must be ",
                              Shape({n, og * 2 * k, oh, ow}).DebugString(),
                              ", got ", off.shape().DebugString()));
    }
    const bool one_mask = mask.NumElements() == 1;
    if (!one_mask && mask.shape() != Shape({n, og * k, oh, ow})) {
      return Bad(absl::StrCat("mask must be ",
                              Shape({n, og * k, oh, ow}).DebugString(),
                              ", got ", mask.shape().DebugString()));
    }
    if (b.NumElements() != o) {
      return Bad(absl::StrCat("bias needs ", o, " values, got ",
                              b.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(Tensor * y,
                     ctx->allocate_output(0, Shape({n, o, oh, ow})));
    auto run = [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Mat =
          Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      const int64_t p = oh * ow, cg = c / g, per_og = c / og;
      std::vector<T> cols(c * k * p);
      for (int64_t img = 0; img < n; ++img) {
        const T* offs = off.data<T>() + img * og * 2 * k * p;
        const T* ms = one_mask ? nullptr : mask.data<T>() + img * og * k * p;
        const T m1 = one_mask ? mask.data<T>()[0] : T(1);
        ParallelFor(
            *ctx, c, static_cast<double>(k * p) * 12,
            [&](int64_t c0, int64_t c1) {
              for (int64_t ch = c0; ch < c1; ++ch) {
                const T* plane = x.data<T>() + (img * c + ch) * h * wd;
                const int64_t grp = ch / per_og;
                for (int64_t t = 0; t < k; ++t) {
                  const int64_t i = t / kw, j = t % kw;
                  const T* dy = offs + (grp * 2 * k + 2 * t) * p;
                  const T* dx = dy + p;
                  T* col = cols.data() + (ch * k + t) * p;
                  for (int64_t q = 0; q < p; ++q) {
                    const int64_t r = q / ow, s = q % ow;
                    const T yy = static_cast<T>(r * a_.strides[0] - a_.pads[0] +
                                                i * a_.dilations[0]) +
                                 dy[q];
                    const T xx = static_cast<T>(s * a_.strides[1] - a_.pads[1] +
                                                j * a_.dilations[1]) +
                                 dx[q];
                    const T m = ms != nullptr ? ms[(grp * k + t) * p + q] : m1;
                    col[q] = m * Bilinear<T>(plane, h, wd, yy, xx);
                  }
                }
              }
            });
        for (int64_t gr = 0; gr < g; ++gr) {
          Eigen::Map<const Mat> wm(w.data<T>() + gr * (o / g) * cg * k, o / g,
                                   cg * k);
          Eigen::Map<const Mat> cm(cols.data() + gr * cg * k * p, cg * k, p);
          Eigen::Map<Mat> out(y->data<T>() + (img * o + gr * (o / g)) * p,
                              o / g, p);
          out.noalias() = wm * cm;
          for (int64_t oc = 0; oc < o / g; ++oc) {
            out.row(oc).array() += b.data<T>()[gr * (o / g) + oc];
          }
        }
      }
      return absl::OkStatus();
    };
    if (x.dtype() == DT_DOUBLE) return run(TypeTag<double>());
    return run(TypeTag<float>());
  }

 private:
  const Attrs a_;
};

}  // namespace

void RegisterDeformConvKernels(KernelRegistry* r) {
  r->Register(CpuKernel("DeformConv", {{"T", {DT_FLOAT, DT_DOUBLE}}},
                        MakeKernel<DeformConvKernel>));
}

}  // namespace sluice::cpu
