// LayerNorm: normalises over dimensions [axis, rank) with population
// variance, then scales and shifts: y = (x - mean) / sqrt(var + eps) * scale
// + bias, where scale and bias have shape x.shape[axis:]. Statistics are
// accumulated in double; float16 and bfloat16 compute in float.
#include <cmath>

#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/wide_sums.h"
#include "kernels/launch_kernel.h"
#include "kernels/normalization_params.h"

namespace sluice::cpu {
namespace {

template <typename T>
void NormalizeRow(const T* x, const T* scale, const T* bias, float eps,
                  int64_t n, T* y) {
  using C = typename ComputeType<T>::type;
  const double mean = WideSum(x, n) / static_cast<double>(n);
  const double var = WideSquaredDistance(x, n, mean) / static_cast<double>(n);
  const C inv = static_cast<C>(1.0 / std::sqrt(var + eps));
  const C m = static_cast<C>(mean);
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<T>((static_cast<C>(x[i]) - m) * inv *
                              static_cast<C>(scale[i]) +
                          static_cast<C>(bias[i]));
  }
}

// The launch of LayerNorm on the CPU; its setup is
// kernels/normalization_params.h.
class LayerNormKernel final : public LaunchKernel<NormAttrs, ParseNormAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& scale = ctx->input(1);
    const Tensor& bias = ctx->input(2);
    ASSIGN_OR_RETURN(NormPlan p, PlanLayerNorm(attrs(), x, scale, bias));
    const float eps = attrs().epsilon;
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape));
    if (x.NumElements() == 0) return absl::OkStatus();
    const int64_t n = p.n, rows = p.rows;
    return VisitFloat(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      const T* sp = scale.data<T>();
      const T* bp = bias.data<T>();
      T* out = y->data<T>();
      ParallelFor(*ctx, rows, 8.0 * static_cast<double>(n),
                  [=](int64_t b, int64_t e) {
                    for (int64_t r = b; r < e; ++r) {
                      NormalizeRow(in + r * n, sp, bp, eps, n, out + r * n);
                    }
                  });
      return absl::OkStatus();
    });
  }
};

}  // namespace

void RegisterLayerNormKernels(KernelRegistry* r) {
  r->Register(CpuKernel("LayerNorm", {{"T", CpuFloatTypes()}},
                        MakeKernel<LayerNormKernel>));
}

}  // namespace sluice::cpu
