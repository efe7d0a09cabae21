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

// The normalised coordinate of index i of `size` points in [-1, 1].
double GridCoord(int64_t i, int64_t size, bool align_corners) {
  const double s = static_cast<double>(size);
  if (align_corners) return size == 1 ? -1.0 : -1.0 + 2.0 * i / (s - 1);
  return -1.0 + (2.0 * static_cast<double>(i) + 1.0) / s;
}

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
    RETURN_IF_ERROR(CheckUnpoolIndices(idx, total));
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


// One bilinear sample: four input offsets and weights (all 0 outside).
struct Sample {
  int64_t off[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

Sample Bilinear(double y, double x, int64_t h, int64_t w) {
  Sample s;
  if (y < -1.0 || y > static_cast<double>(h) || x < -1.0 ||
      x > static_cast<double>(w)) {
    return s;
  }
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
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
  const double offset = a.half_pixel ? 0.5 : 0.0;
  const double scale = a.spatial_scale;
  const T* r = rois.data<T>();
  T* out = y->data<T>();
  for (int64_t n = 0; n < rois.dim(0); ++n) {
    const double x0 = ToDouble(r[n * 4 + 0]) * scale - offset;
    const double y0 = ToDouble(r[n * 4 + 1]) * scale - offset;
    const double x1 = ToDouble(r[n * 4 + 2]) * scale - offset;
    const double y1 = ToDouble(r[n * 4 + 3]) * scale - offset;
    double rw = x1 - x0, rh = y1 - y0;
    if (!a.half_pixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / static_cast<double>(a.out_h);
    const double bw = rw / static_cast<double>(a.out_w);
    const int64_t gh = a.sampling_ratio > 0
                           ? a.sampling_ratio
                           : static_cast<int64_t>(std::ceil(rh / a.out_h));
    const int64_t gw = a.sampling_ratio > 0
                           ? a.sampling_ratio
                           : static_cast<int64_t>(std::ceil(rw / a.out_w));
    const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
    std::vector<Sample> samples;
    for (int64_t ph = 0; ph < a.out_h; ++ph) {
      for (int64_t pw = 0; pw < a.out_w; ++pw) {
        for (int64_t iy = 0; iy < gh; ++iy) {
          const double yy = y0 + ph * bh + (iy + 0.5) * bh / gh;
          for (int64_t ix = 0; ix < gw; ++ix) {
            const double xx = x0 + pw * bw + (ix + 0.5) * bw / gw;
            samples.push_back(Bilinear(yy, xx, h, w));
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
          const Sample& sm = samples[b * per_bin + s];
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
