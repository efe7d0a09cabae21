// Trilu, CumSum and CumProd: ops whose scalar parameter (Trilu's diagonal
// offset k, the axis of CumSum and CumProd) is a runtime input, as in ONNX, since the output's shape
// does not depend on it.
#include <memory>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

// The single integer in `t` (shape [] or [1]), int32 or int64.
absl::StatusOr<int64_t> ScalarInt(const Tensor& t, absl::string_view what) {
  if (t.NumElements() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " must hold one value, got shape ", t.shape().DebugString()));
  }
  if (t.dtype() == DT_INT64) return t.data<int64_t>()[0];
  if (t.dtype() == DT_INT32) return t.data<int32_t>()[0];
  return absl::InvalidArgumentError(
      absl::StrCat(what, " must be int32 or int64"));
}

// y = x with the elements below (upper) or above (lower) the k-th diagonal
// of each of the innermost matrices set to zero.
class TriluKernel final : public OpKernel {
 public:
  struct Attrs {
    bool upper = true;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.upper, node.attrs().GetBool("upper"));
    return a;
  }
  TriluKernel(const Node& node, Attrs attrs) : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(int64_t k, ScalarInt(ctx->input(1), "Trilu's k"));
    if (x.shape().rank() < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Trilu needs rank >= 2, got ", x.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    const int rank = x.shape().rank();
    const int64_t rows = x.shape().dim(rank - 2);
    const int64_t cols = x.shape().dim(rank - 1);
    const int64_t total = x.NumElements();
    const bool upper = attrs_.upper;
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

 private:
  const Attrs attrs_;
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
class CumulativeKernel final : public OpKernel {
 public:
  struct Attrs {
    bool exclusive = false;
    bool reverse = false;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.exclusive, node.attrs().GetBool("exclusive"));
    ASSIGN_OR_RETURN(a.reverse, node.attrs().GetBool("reverse"));
    return a;
  }
  CumulativeKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(
        int64_t axis_value,
        ScalarInt(ctx->input(1), absl::StrCat(node().op(), "'s axis")));
    ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_value, x.shape().rank()));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; ++i) outer *= x.shape().dim(i);
    for (int i = axis + 1; i < x.shape().rank(); ++i) {
      inner *= x.shape().dim(i);
    }
    const int64_t n = x.shape().dim(axis);
    const Attrs a = attrs_;
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

 private:
  const Attrs attrs_;
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
