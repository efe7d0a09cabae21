// Unary elementwise kernels: Neg, Abs, Relu (float and int), and Exp, Log,
// Sqrt, Rsqrt, Tanh, Sigmoid, Erf, Gelu (float). Each is an Eigen array
// expression, so float and double loops are vectorised; float16 and bfloat16
// are widened to float in small stack blocks.
#include <cmath>
#include <memory>
#include <string>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "unsupported/Eigen/SpecialFunctions"

namespace sluice::cpu {
namespace {

template <typename T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// Each op: Eval maps an Eigen array expression; kCost is rough cycles per
// element, for ParallelFor.
struct NegOp {
  static constexpr double kCost = 1;
  template <typename A> static auto Eval(const A& x) { return -x; }
};
struct AbsOp {
  static constexpr double kCost = 1;
  template <typename A> static auto Eval(const A& x) { return x.abs(); }
};
struct ReluOp {
  static constexpr double kCost = 1;
  template <typename A> static auto Eval(const A& x) {
    return x.max(typename A::Scalar(0));
  }
};
struct ExpOp {
  static constexpr double kCost = 20;
  template <typename A> static auto Eval(const A& x) { return x.exp(); }
};
struct LogOp {
  static constexpr double kCost = 20;
  template <typename A> static auto Eval(const A& x) { return x.log(); }
};
struct SqrtOp {
  static constexpr double kCost = 10;
  template <typename A> static auto Eval(const A& x) { return x.sqrt(); }
};
struct RsqrtOp {
  static constexpr double kCost = 10;
  template <typename A> static auto Eval(const A& x) { return x.rsqrt(); }
};
struct TanhOp {
  static constexpr double kCost = 20;
  template <typename A> static auto Eval(const A& x) { return x.tanh(); }
};
struct SigmoidOp {
  static constexpr double kCost = 20;
  template <typename A> static auto Eval(const A& x) { return x.logistic(); }
};
struct ErfOp {
  static constexpr double kCost = 20;
  template <typename A> static auto Eval(const A& x) { return x.erf(); }
};
// 0.5 x (1 + erf(x / sqrt(2))).
struct GeluErfOp {
  static constexpr double kCost = 25;
  template <typename A> static auto Eval(const A& x) {
    using S = typename A::Scalar;
    return x * (S(0.5) + S(0.5) * (x * S(M_SQRT1_2)).erf());
  }
};
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
struct GeluTanhOp {
  static constexpr double kCost = 25;
  template <typename A> static auto Eval(const A& x) {
    using S = typename A::Scalar;
    const S k = S(0.7978845608028654);  // sqrt(2 / pi)
    return x * (S(0.5) + S(0.5) * (k * (x + S(0.044715) * x.cube())).tanh());
  }
};

// y[0, n) = Op(x[0, n)).
template <typename Op, typename T>
void UnaryRange(const T* x, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    constexpr int64_t kBlock = 256;
    float buf[kBlock];
    for (int64_t i = 0; i < n; i += kBlock) {
      const int64_t len = std::min(kBlock, n - i);
      for (int64_t j = 0; j < len; ++j) buf[j] = static_cast<float>(x[i + j]);
      ArrayMap<float> a(buf, len);
      a = Op::Eval(a);
      for (int64_t j = 0; j < len; ++j) y[i + j] = static_cast<T>(buf[j]);
    }
  } else {
    ArrayMap<T>(y, n) = Op::Eval(ConstArrayMap<T>(x, n));
  }
}

enum class UnaryFamily { kArith, kFloat };

template <typename Op, UnaryFamily kFamily>
class UnaryKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    RETURN_IF_ERROR(CheckDtype(x, node().output_dtype(0), "input x"));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    auto run = [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      T* out = y->data<T>();
      ParallelFor(*ctx, x.NumElements(), Op::kCost,
                  [in, out](int64_t b, int64_t e) {
                    UnaryRange<Op, T>(in + b, out + b, e - b);
                  });
      return absl::OkStatus();
    };
    if constexpr (kFamily == UnaryFamily::kArith) {
      return VisitArith(x.dtype(), run);
    } else {
      return VisitFloat(x.dtype(), run);
    }
  }
};

absl::StatusOr<std::unique_ptr<OpKernel>> MakeGelu(const Node& node) {
  // Read directly: GetString's StatusOr<std::string> trips GCC 12's
  // -Wmaybe-uninitialized here.
  const AttrValue* attr = node.attrs().Find("approximate");
  if (attr != nullptr && attr->value_case() != AttrValue::kS) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute 'approximate' is ", AttrValueKind(*attr),
                     ", not string"));
  }
  const std::string approximate = attr == nullptr ? "none" : attr->s();
  if (approximate == "none") {
    return MakeKernel<UnaryKernel<GeluErfOp, UnaryFamily::kFloat>>(node);
  }
  if (approximate == "tanh") {
    return MakeKernel<UnaryKernel<GeluTanhOp, UnaryFamily::kFloat>>(node);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "Gelu: approximate must be \"none\" or \"tanh\", got \"", approximate,
      "\""));
}

template <typename Op>
void RegisterFloat(KernelRegistry* r, const char* op) {
  r->Register(CpuKernel(op, {{"T", CpuFloatTypes()}},
                        MakeKernel<UnaryKernel<Op, UnaryFamily::kFloat>>));
}

}  // namespace

void RegisterUnaryKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Neg", {{"T", CpuArithTypes()}},
                        MakeKernel<UnaryKernel<NegOp, UnaryFamily::kArith>>));
  r->Register(CpuKernel("Abs", {{"T", CpuArithTypes()}},
                        MakeKernel<UnaryKernel<AbsOp, UnaryFamily::kArith>>));
  r->Register(CpuKernel("Relu", {{"T", CpuArithTypes()}},
                        MakeKernel<UnaryKernel<ReluOp, UnaryFamily::kArith>>));
  RegisterFloat<ExpOp>(r, "Exp");
  RegisterFloat<LogOp>(r, "Log");
  RegisterFloat<SqrtOp>(r, "Sqrt");
  RegisterFloat<RsqrtOp>(r, "Rsqrt");
  RegisterFloat<TanhOp>(r, "Tanh");
  RegisterFloat<SigmoidOp>(r, "Sigmoid");
  RegisterFloat<ErfOp>(r, "Erf");
  r->Register(CpuKernel("Gelu", {{"T", CpuFloatTypes()}}, MakeGelu));
}

}  // namespace sluice::cpu
