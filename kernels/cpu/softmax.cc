// Softmax along one axis, numerically stable (the maximum is subtracted
// before exponentiating). The tensor is viewed as [outer, n, inner].
// float16 and bfloat16 compute in float.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "Eigen/Core"
#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/launch_kernel.h"
#include "kernels/normalization_params.h"

namespace sluice::cpu {
namespace {

// One softmax over x[0], x[s], ..., x[(n-1)s], computed in C (float for
// the 16-bit types).
template <typename T>
void SoftmaxStrided(const T* x, T* y, int64_t n, int64_t s) {
  using C = typename ComputeType<T>::type;
  if constexpr (std::is_same_v<T, float>) {
    if (s == 1) {
      // Contiguous float32 (attention's last axis): Eigen's vectorised exp
      // (within a few ulp of std::exp), eight values an instruction.
      // Eigen's exp clamps its argument near -88.4 (so exp(-inf) would be a
      // denormal, not 0): an exponent below float's normal range
      // (exp(-87.3) = 1.2e-38) gives 0, and a masked -inf score exactly 0.
      // (Eigen 3.4's select() is not vectorised, so the zeros are a loop of
      // their own that the compiler vectorises.)
      Eigen::Map<const Eigen::ArrayXf> xv(x, n);
      Eigen::Map<Eigen::ArrayXf> yv(y, n);
      const float m = xv.maxCoeff();
      yv = (xv - m).exp();
      for (int64_t i = 0; i < n; ++i) {
        y[i] = x[i] - m < -87.3f ? 0.0f : y[i];
      }
      yv *= 1.0f / yv.sum();
      return;
    }
  }
  C mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, static_cast<C>(x[i * s]));
  C sum = 0;
  if constexpr (std::is_same_v<C, T>) {
    // float and double: keep each exp in y and scale it there, so exp runs
    // once per value (the same results as computing it twice).
    for (int64_t i = 0; i < n; ++i) {
      const C e = std::exp(x[i * s] - mx);
      y[i * s] = e;
      sum += e;
    }
    const C inv = C(1) / sum;
    for (int64_t i = 0; i < n; ++i) y[i * s] *= inv;
    return;
  }
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<C>(x[i * s]) - mx);
  const C inv = C(1) / sum;
  for (int64_t i = 0; i < n; ++i) {
    y[i * s] = static_cast<T>(std::exp(static_cast<C>(x[i * s]) - mx) * inv);
  }
}

// The launch of Softmax on the CPU; its setup is kernels/normalization_params.h.
class SoftmaxKernel final
    : public LaunchKernel<SoftmaxAttrs, ParseSoftmaxAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(SoftmaxPlan p, PlanSoftmax(attrs(), x.shape()));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape));
    if (x.NumElements() == 0) return absl::OkStatus();
    return VisitFloat(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      T* out = y->data<T>();
      const int64_t n = p.n, inner = p.inner;
      // One unit of work: a softmax over n values at one (outer, inner) point.
      ParallelFor(*ctx, p.outer * inner, 40.0 * static_cast<double>(n),
                  [=](int64_t b, int64_t e) {
                    for (int64_t u = b; u < e; ++u) {
                      const int64_t o = u / inner, i = u % inner;
                      const int64_t base = o * n * inner + i;
                      SoftmaxStrided(in + base, out + base, n, inner);
                    }
                  });
      return absl::OkStatus();
    });
  }
};

}  // namespace

void RegisterSoftmaxKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Softmax", {{"T", CpuFloatTypes()}},
                        MakeKernel<SoftmaxKernel>));
}

}  // namespace sluice::cpu
