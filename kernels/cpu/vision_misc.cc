// AffineGrid, MaxUnpool and RoiAlign on the CPU, after the ONNX reference
// (onnx/reference/ops/op_affine_grid.py, op_max_unpool.py, op_roi_align.py,
// the last one a port of ONNX Runtime's RoiAlign).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/status_macros.h"
#include "graph/runtime_params.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/window_nd.h"
#include "kernels/launch_kernel.h"
#include "kernels/vision_params.h"

namespace sluice::cpu {
namespace {

class AffineGridKernel final
    : public LaunchKernel<AffineGridAttrs, ParseAffineGridAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& theta = ctx->input(0);
    ASSIGN_OR_RETURN(std::vector<int64_t> size,
                     IntParamValues(ctx->input(1), "size"));
    ASSIGN_OR_RETURN(std::vector<int64_t> dims, AffineGridDims(theta, size));
    const int64_t r = static_cast<int64_t>(size.size()) - 2;
    int64_t points = 1;
    for (int64_t d = 0; d < r; ++d) points *= size[2 + d];
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(dims)));
    return VisitFloat(theta.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* th = theta.data<T>();
      T* out = y->data<T>();
      std::vector<double> homo(r + 1);
      for (int64_t n = 0; n < size[0]; ++n) {
        for (int64_t p = 0; p < points; ++p) {
          // homo = (x, y[, z], 1): x along the last dim.
          int64_t rest = p;
          for (int64_t d = r - 1; d >= 0; --d) {
            const int64_t len = size[2 + d];
            homo[r - 1 - d] = GridCoord(rest % len, len, attrs().align_corners);
            rest /= len;
          }
          homo[r] = 1.0;
          for (int64_t i = 0; i < r; ++i) {
            double acc = 0;
            for (int64_t j = 0; j <= r; ++j) {
              acc += ToDouble(th[(n * r + i) * (r + 1) + j]) * homo[j];
            }
            out[(n * points + p) * r + i] = FromDouble<T>(acc);
          }
        }
      }
      return absl::OkStatus();
    });
  }
};

class MaxUnpoolKernel final
    : public LaunchKernel<MaxUnpoolAttrs, ParseMaxUnpoolAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& idx = ctx->input(1);
    ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                     PlanMaxUnpool(attrs(), x, idx, ctx->input(2)));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(dims)));
    const int64_t total = y->NumElements();
    return VisitBySize(x.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      T* out = static_cast<T*>(y->raw_data());
      std::fill(out, out + total, T{});
      const T* in = static_cast<const T*>(x.raw_data());
      const int64_t* where = idx.data<int64_t>();
      for (int64_t i = 0; i < x.NumElements(); ++i) out[where[i]] = in[i];
      return absl::OkStatus();
    });
  }
};

class RoiAlignKernel final
    : public LaunchKernel<RoiAlignAttrs, ParseRoiAlignAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override;

 private:
  template <typename T>
  void Run(const Tensor& x, const Tensor& rois, const int64_t* batch,
           Tensor* y) const;
};

template <typename T>
void RoiAlignKernel::Run(const Tensor& x, const Tensor& rois,
                         const int64_t* batch, Tensor* y) const {
  const RoiAlignAttrs& a = attrs();
  const int64_t channels = x.dim(1), h = x.dim(2), w = x.dim(3);
  const T* r = rois.data<T>();
  T* out = y->data<T>();
  for (int64_t n = 0; n < rois.dim(0); ++n) {
    const double box[4] = {ToDouble(r[n * 4 + 0]), ToDouble(r[n * 4 + 1]),
                           ToDouble(r[n * 4 + 2]), ToDouble(r[n * 4 + 3])};
    const RoiBins roi = RoiBinsFor(box, a.spatial_scale, a.half_pixel,
                                    a.sampling_ratio, a.out_h, a.out_w);
    const double y0 = roi.y0, x0 = roi.x0, bh = roi.bh, bw = roi.bw;
    const int64_t gh = roi.gh, gw = roi.gw;
    const double count = roi.count;
    std::vector<RoiSample> samples;
    for (int64_t ph = 0; ph < a.out_h; ++ph) {
      for (int64_t pw = 0; pw < a.out_w; ++pw) {
        for (int64_t iy = 0; iy < gh; ++iy) {
          const double yy = y0 + ph * bh + (iy + 0.5) * bh / gh;
          for (int64_t ix = 0; ix < gw; ++ix) {
            const double xx = x0 + pw * bw + (ix + 0.5) * bw / gw;
            samples.push_back(RoiBilinear(yy, xx, h, w));
          }
        }
      }
    }
    const int64_t per_bin = gh * gw;
    for (int64_t c = 0; c < channels; ++c) {
      const T* plane = x.data<T>() + (batch[n] * channels + c) * h * w;
      for (int64_t b = 0; b < a.out_h * a.out_w; ++b) {
        double acc = 0;
        for (int64_t s = 0; s < per_bin; ++s) {
          const RoiSample& sm = samples[b * per_bin + s];
          if (a.max) {
            double v = sm.w[0] * ToDouble(plane[sm.off[0]]);
            for (int k = 1; k < 4; ++k) {
              v = std::max(v, sm.w[k] * ToDouble(plane[sm.off[k]]));
            }
            acc = s == 0 ? v : std::max(acc, v);
          } else {
            for (int k = 0; k < 4; ++k) {
              acc += sm.w[k] * ToDouble(plane[sm.off[k]]);
            }
          }
        }
        if (!a.max) acc /= count;
        out[(n * channels + c) * a.out_h * a.out_w + b] = FromDouble<T>(acc);
      }
    }
  }
}

absl::Status RoiAlignKernel::Compute(OpKernelContext* ctx) {
  const RoiAlignAttrs& a = attrs();
  RETURN_IF_ERROR(CheckHostInputs(*ctx));
  const Tensor& x = ctx->input(0);
  const Tensor& rois = ctx->input(1);
  ASSIGN_OR_RETURN(std::vector<int64_t> batch,
                   IntParamValues(ctx->input(2), "batch_indices"));
  RETURN_IF_ERROR(CheckRoiAlignInputs(x, rois, batch));
  ASSIGN_OR_RETURN(Tensor * y,
                   ctx->allocate_output(0, Shape({rois.dim(0), x.dim(1),
                                                  a.out_h, a.out_w})));
  if (y->NumElements() == 0) return absl::OkStatus();
  return VisitFloat(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    Run<T>(x, rois, batch.data(), y);
    return absl::OkStatus();
  });
}

}  // namespace

void RegisterVisionMiscKernels(KernelRegistry* r) {
  r->Register(CpuKernel("AffineGrid", {{"T", CpuFloatTypes()}},
                        MakeKernel<AffineGridKernel>));
  r->Register(CpuKernel("MaxUnpool", {{"T", CpuAllTypes()}},
                        MakeKernel<MaxUnpoolKernel>));
  r->Register(CpuKernel("RoiAlign", {{"T", CpuFloatTypes()}},
                        MakeKernel<RoiAlignKernel>));
}

}  // namespace sluice::cpu
