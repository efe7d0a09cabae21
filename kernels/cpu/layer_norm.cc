// LayerNorm: normalises over dimensions [axis, rank) with population
// variance, then scales and shifts: y = (x - mean) / sqrt(var + eps) * scale
// + bias, where scale and bias have shape x.shape[axis:]. Statistics are
// accumulated in double.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

void NormalizeRow(const float* x, const float* scale, const float* bias,
                  float eps, int64_t n, float* y) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const double mean = sum / static_cast<double>(n);
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = x[i] - mean;
    sq += d * d;
  }
  const double var = sq / static_cast<double>(n);
  const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
  const float m = static_cast<float>(mean);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) * inv * scale[i] + bias[i];
}

class LayerNormKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& scale = ctx->input(1);
    const Tensor& bias = ctx->input(2);
    RETURN_IF_ERROR(CheckDtype(x, DT_FLOAT, "input x"));
    RETURN_IF_ERROR(CheckDtype(scale, DT_FLOAT, "input scale"));
    RETURN_IF_ERROR(CheckDtype(bias, DT_FLOAT, "input bias"));
    ASSIGN_OR_RETURN(int64_t axis_attr, node().attrs().GetInt("axis"));
    ASSIGN_OR_RETURN(float eps, node().attrs().GetFloat("epsilon"));
    if (x.rank() == 0) {
      return absl::InvalidArgumentError("LayerNorm needs a tensor of rank >= 1");
    }
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_attr, x.rank()));
    const Shape norm(absl::MakeConstSpan(x.shape().dims()).subspan(axis));
    if (scale.shape() != norm || bias.shape() != norm) {
      return absl::InvalidArgumentError(absl::StrCat(
          "LayerNorm scale ", scale.shape().DebugString(), " and bias ",
          bias.shape().DebugString(), " must have shape x.shape[axis:] = ",
          norm.DebugString(), " (x ", x.shape().DebugString(), ", axis ",
          axis_attr, ")"));
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    const int64_t n = norm.num_elements();
    if (x.NumElements() == 0) return absl::OkStatus();
    const int64_t rows = x.NumElements() / n;
    const float* in = x.data<float>();
    const float* sp = scale.data<float>();
    const float* bp = bias.data<float>();
    float* out = y->data<float>();
    ParallelFor(*ctx, rows, 8.0 * static_cast<double>(n),
                [=](int64_t b, int64_t e) {
                  for (int64_t r = b; r < e; ++r) {
                    NormalizeRow(in + r * n, sp, bp, eps, n, out + r * n);
                  }
                });
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterLayerNormKernels(KernelRegistry* r) {
  r->Register(CpuKernel("LayerNorm", {{"T", CpuNnTypes()}},
                        MakeKernel<LayerNormKernel>));
}

}  // namespace sluice::cpu
