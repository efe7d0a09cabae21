// LRN on the CPU (kernels/cpu/lrn.h).
#include "kernels/cpu/lrn.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/status_macros.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/launch_kernel.h"
#include "kernels/normalization_params.h"

namespace sluice::cpu {
namespace {

class LrnKernel final : public LaunchKernel<LrnAttrs, ParseLrnAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(LrnPlan p, PlanLrn(attrs(), x.shape()));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape));
    if (x.NumElements() == 0) return absl::OkStatus();
    const LrnAttrs a = attrs();
    return VisitFloat(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = typename ComputeType<T>::type;
      const T* in = x.data<T>();
      T* out = y->data<T>();
      const int64_t channels = p.channels, inner = p.inner;
      const C scale = static_cast<C>(a.alpha) / static_cast<C>(a.size);
      const C bias = static_cast<C>(a.bias), beta = static_cast<C>(a.beta);
      // One unit of work: an output plane (n, c) of `inner` values.
      ParallelFor(
          *ctx, p.batch * channels,
          static_cast<double>(inner) * static_cast<double>(a.size + 20),
          [=, &p](int64_t b, int64_t e) {
            std::vector<C> sum(inner);
            for (int64_t u = b; u < e; ++u) {
              const int64_t n = u / channels, c = u % channels;
              const int64_t lo = std::max<int64_t>(0, c - p.before);
              const int64_t hi = std::min<int64_t>(channels - 1, c + p.after);
              std::fill(sum.begin(), sum.end(), C(0));
              for (int64_t k = lo; k <= hi; ++k) {
                const T* plane = in + (n * channels + k) * inner;
                for (int64_t i = 0; i < inner; ++i) {
                  const C v = static_cast<C>(plane[i]);
                  sum[i] += v * v;
                }
              }
              const T* xp = in + u * inner;
              T* yp = out + u * inner;
              for (int64_t i = 0; i < inner; ++i) {
                yp[i] = static_cast<T>(static_cast<C>(xp[i]) *
                                       std::pow(bias + scale * sum[i], -beta));
              }
            }
          });
      return absl::OkStatus();
    });
  }
};

}  // namespace

void RegisterLrnKernels(KernelRegistry* r) {
  r->Register(
      CpuKernel("LRN", {{"T", CpuFloatTypes()}}, MakeKernel<LrnKernel>));
}

}  // namespace sluice::cpu
