// RMSNorm: y = x / sqrt(mean(x^2 over dimensions [axis, rank)) + eps) *
// scale, where scale has shape x.shape[axis:]. The mean of squares is
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
void RmsNormalizeRow(const T* x, const T* scale, float eps, int64_t n, T* y) {
  using C = typename ComputeType<T>::type;
  const double mean_sq =
      WideSquaredDistance(x, n, 0.0) / static_cast<double>(n);
  const C inv = static_cast<C>(1.0 / std::sqrt(mean_sq + eps));
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<T>(static_cast<C>(x[i]) * inv *
                          static_cast<C>(scale[i]));
  }
}

// The launch of RMSNorm on the CPU; its setup is
// kernels/normalization_params.h.
class RMSNormKernel final : public LaunchKernel<NormAttrs, ParseNormAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& scale = ctx->input(1);
    ASSIGN_OR_RETURN(NormPlan p, PlanRmsNorm(attrs(), x, scale));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape));
    if (x.NumElements() == 0) return absl::OkStatus();
    const int64_t n = p.n, rows = p.rows;
    const float eps = attrs().epsilon;
    return VisitFloat(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      const T* sp = scale.data<T>();
      T* out = y->data<T>();
      ParallelFor(*ctx, rows, 5.0 * static_cast<double>(n),
                  [=](int64_t b, int64_t e) {
                    for (int64_t r = b; r < e; ++r) {
                      RmsNormalizeRow(in + r * n, sp, eps, n, out + r * n);
                    }
                  });
      return absl::OkStatus();
    });
  }
};

}  // namespace

void RegisterRMSNormKernels(KernelRegistry* r) {
  r->Register(CpuKernel("RMSNorm", {{"T", CpuFloatTypes()}},
                        MakeKernel<RMSNormKernel>));
}

}  // namespace sluice::cpu
