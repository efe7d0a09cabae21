// ConvND, ConvTranspose and Col2Im over any number of spatial dims, float32,
// [N, C, spatial...]. ConvND: per image and group, im2col then one GEMM.
// ConvTranspose: per image and group, one GEMM (filter^T x input) into
// columns, then col2im into the zeroed output. Col2Im is that last step on
// its own.
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/runtime_params.h"
#include "graph/shape_fns.h"
#include "graph/vision_shapes.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/window_nd.h"
#include "kernels/launch_kernel.h"
#include "kernels/vision_params.h"

namespace sluice::cpu {
namespace {

class ConvNdKernel final : public LaunchKernel<ConvAttrs, ParseConvAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& f = ctx->input(1);
    RETURN_IF_ERROR(CheckDtype(x, DT_FLOAT, "input"));  // float32 here
    const ConvAttrs& a = attrs();
    ASSIGN_OR_RETURN(ConvPlan p, PlanConv(a, x, f));
    const WindowNd& g = p.window;
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(p.out_dims)));
    if (y->NumElements() == 0) return absl::OkStatus();
    const int64_t k = g.channels * g.KernelSize(), spatial = g.OutSize();
    const int64_t og = f.dim(0) / a.group, in_size = g.InSize();
    ASSIGN_OR_RETURN(Tensor col,
                     ctx->allocate_temp(DT_FLOAT, Shape({k, spatial})));
    const auto* pool = ctx->device()->eigen_cpu_device();
    for (int64_t b = 0; b < x.dim(0); ++b) {
      for (int64_t gi = 0; gi < a.group; ++gi) {
        Im2ColNd(g,
                 x.data<float>() + (b * x.dim(1) + gi * g.channels) * in_size,
                 col.data<float>());
        Gemm<float>(pool, f.data<float>() + gi * og * k, col.data<float>(),
                    y->data<float>() + (b * f.dim(0) + gi * og) * spatial, og,
                    spatial, k, false, false);
      }
    }
    return absl::OkStatus();
  }
};

class ConvTransposeKernel final : public LaunchKernel<ConvAttrs, ParseConvAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& f = ctx->input(1);
    RETURN_IF_ERROR(CheckDtype(x, DT_FLOAT, "input"));  // float32 here
    const ConvAttrs& a = attrs();
    // The output is the "image" of a window whose positions are the input.
    ASSIGN_OR_RETURN(ConvPlan p, PlanConv(a, x, f));
    const WindowNd& g = p.window;
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(p.out_dims)));
    float* out = y->data<float>();
    for (int64_t i = 0; i < y->NumElements(); ++i) out[i] = 0;
    if (y->NumElements() == 0 || x.NumElements() == 0) {
      return absl::OkStatus();
    }
    const int64_t cg = x.dim(1) / a.group;
    const int64_t rows = g.channels * g.KernelSize(), cols_n = g.OutSize();
    const int64_t out_size = g.InSize();
    ASSIGN_OR_RETURN(Tensor cols,
                     ctx->allocate_temp(DT_FLOAT, Shape({rows, cols_n})));
    const auto* pool = ctx->device()->eigen_cpu_device();
    for (int64_t b = 0; b < x.dim(0); ++b) {
      for (int64_t gi = 0; gi < a.group; ++gi) {
        // cols [M/g * K, IN] = W_g^T ([C/g, M/g * K]^T) x X_g [C/g, IN].
        Gemm<float>(pool, f.data<float>() + gi * cg * rows,
                    x.data<float>() + (b * x.dim(1) + gi * cg) * cols_n,
                    cols.data<float>(), rows, cols_n, cg, true, false);
        Col2ImNd(g, cols.data<float>(),
                 out + (b * p.out_dims[1] + gi * g.channels) * out_size);
      }
    }
    return absl::OkStatus();
  }
};

class Col2ImKernel final : public LaunchKernel<Col2ImAttrs, ParseCol2ImAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    std::vector<int64_t> dims;
    ASSIGN_OR_RETURN(WindowNd g, Col2ImWindow(attrs(), x, ctx->input(1),
                                              ctx->input(2), &dims));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, Shape(dims)));
    float* out = y->data<float>();
    for (int64_t i = 0; i < y->NumElements(); ++i) out[i] = 0;
    const int64_t per_in = x.dim(1) * x.dim(2), per_out = g.channels * g.InSize();
    for (int64_t b = 0; b < x.dim(0); ++b) {
      Col2ImNd(g, x.data<float>() + b * per_in, out + b * per_out);
    }
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterConvNdKernels(KernelRegistry* r) {
  r->Register(CpuKernel("ConvND", {{"T", CpuNnTypes()}},
                        MakeKernel<ConvNdKernel>));
  r->Register(CpuKernel("ConvTranspose", {{"T", CpuNnTypes()}},
                        MakeKernel<ConvTransposeKernel>));
  r->Register(CpuKernel("Col2Im", {{"T", CpuNnTypes()}},
                        MakeKernel<Col2ImKernel>));
}

}  // namespace sluice::cpu
