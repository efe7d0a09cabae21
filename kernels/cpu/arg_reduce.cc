// ArgMax and ArgMin: the int64 index of the largest (smallest) element along
// one axis; the first one on ties, or the last with select_last_index.
#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/index_params.h"
#include "kernels/launch_kernel.h"

namespace sluice::cpu {
namespace {

// The launch of ArgMax (kMax) and ArgMin on the CPU; their setup is
// kernels/index_params.h.
template <bool kMax>
class ArgReduceKernel final
    : public LaunchKernel<ArgReduceAttrs, ParseArgReduceAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(AxisPlan params, PlanArgReduce(attrs(), x.shape()));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, params.out_shape));
    const int64_t outer = params.view.outer, n = params.view.n,
                  inner = params.view.inner;
    const bool last = attrs().select_last_index;
    int64_t* out = y->data<int64_t>();
    return VisitArith(x.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      using C = typename ComputeType<T>::type;
      const T* in = x.data<T>();
      ParallelFor(*ctx, outer * inner, static_cast<double>(n),
                  [=](int64_t b, int64_t e) {
                    for (int64_t r = b; r < e; ++r) {
                      const T* p = in + (r / inner) * n * inner + r % inner;
                      C best = C(p[0]);
                      int64_t best_i = 0;
                      for (int64_t i = 1; i < n; ++i) {
                        const C v = C(p[i * inner]);
                        const bool better = kMax ? (last ? v >= best : v > best)
                                                 : (last ? v <= best : v < best);
                        if (better) {
                          best = v;
                          best_i = i;
                        }
                      }
                      out[r] = best_i;
                    }
                  });
      return absl::OkStatus();
    });
  }
};

}  // namespace

void RegisterArgReduceKernels(KernelRegistry* r) {
  r->Register(CpuKernel("ArgMax", {{"T", CpuArithTypes()}},
                        MakeKernel<ArgReduceKernel<true>>));
  r->Register(CpuKernel("ArgMin", {{"T", CpuArithTypes()}},
                        MakeKernel<ArgReduceKernel<false>>));
}

}  // namespace sluice::cpu
