// Trilu, CumSum and CumProd: ops whose scalar parameter (Trilu's diagonal
// offset k, the axis of CumSum and CumProd) is a runtime input, as in ONNX, since the output's shape
// does not depend on it.
#include <type_traits>

#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/index_params.h"
#include "kernels/launch_kernel.h"

namespace sluice::cpu {
namespace {

// y = x with the elements below (upper) or above (lower) the k-th diagonal
// of each of the innermost matrices set to zero. The setup of Trilu and the
// cumulative ops is kernels/index_params.h.
class TriluKernel final : public LaunchKernel<TriluAttrs, ParseTriluAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(TriluPlan p, PlanTrilu(x.shape(), ctx->input(1)));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape));
    const int64_t rows = p.rows, cols = p.cols, k = p.k;
    const int64_t total = x.NumElements();
    const bool upper = attrs().upper;
    return VisitBySize(x.dtype(), [&](auto tag) -> absl::Status {
      using U = typename decltype(tag)::type;  // zero bits are 0 / 0.0 / false
      const U* in = x.data<U>();
      U* out = y->data<U>();
      for (int64_t i = 0; i < total; ++i) {
        const int64_t c = i % cols;
        const int64_t r = (i / cols) % rows;
        const bool keep = upper ? c - r >= k : c - r <= k;
        out[i] = keep ? in[i] : U(0);
      }
      return absl::OkStatus();
    });
  }
};

// Running sums (CumSum) or products (CumProd) along a runtime axis;
// exclusive leaves out the element itself, reverse runs from the end.
// Integer arithmetic wraps (it is done in the unsigned type).
struct SumOp {
  template <typename C>
  static C Identity() { return C(0); }
  template <typename C>
  static C Apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      using U = std::make_unsigned_t<C>;
      return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
    } else {
      return a + b;
    }
  }
};
struct ProdOp {
  template <typename C>
  static C Identity() { return C(1); }
  template <typename C>
  static C Apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      using U = std::make_unsigned_t<C>;
      // Promotion-safe: 16-bit unsigned products would overflow int.
      using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
      return static_cast<C>(static_cast<W>(static_cast<U>(a)) *
                            static_cast<W>(static_cast<U>(b)));
    } else {
      return a * b;
    }
  }
};

template <typename Op>
class CumulativeKernel final
    : public LaunchKernel<CumulativeAttrs, ParseCumulativeAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(AxisPlan p,
                     PlanCumulative(attrs(), x.shape(), ctx->input(1)));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape));
    const int64_t outer = p.view.outer, n = p.view.n, inner = p.view.inner;
    const Attrs a = attrs();
    return VisitArith(x.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      using C = typename ComputeType<T>::type;
      const T* in = x.data<T>();
      T* out = y->data<T>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t j = 0; j < inner; ++j) {
          C acc = Op::template Identity<C>();
          for (int64_t s = 0; s < n; ++s) {
            const int64_t i = a.reverse ? n - 1 - s : s;
            const int64_t at = (o * n + i) * inner + j;
            if (a.exclusive) {
              out[at] = static_cast<T>(acc);
              acc = Op::Apply(acc, C(in[at]));
            } else {
              acc = Op::Apply(acc, C(in[at]));
              out[at] = static_cast<T>(acc);
            }
          }
        }
      }
      return absl::OkStatus();
    });
  }
};

}  // namespace

void RegisterTriluCumSumKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Trilu", {{"T", CpuAllTypes()}},
                        MakeKernel<TriluKernel>));
  r->Register(CpuKernel("CumSum", {{"T", CpuArithTypes()}},
                        MakeKernel<CumulativeKernel<SumOp>>));
  r->Register(CpuKernel("CumProd", {{"T", CpuArithTypes()}},
                        MakeKernel<CumulativeKernel<ProdOp>>));
}

}  // namespace sluice::cpu
