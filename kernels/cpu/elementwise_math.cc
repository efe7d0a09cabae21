// The unary math family: trigonometric and hyperbolic functions, rounding,
// Sign, and the activations (Softplus, Softsign, Mish, HardSwish, and Elu,
// Selu, Celu, HardSigmoid, ThresholdedRelu with their float attributes).
// One kernel template: each op is a scalar function applied in the compute
// type (float for float16/bfloat16, T otherwise), over ParallelFor chunks.
#include <cmath>
#include <memory>
#include <type_traits>

#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

// Optional float attributes of the parameterised activations (alpha and,
// for HardSigmoid and Selu, beta/gamma), parsed once at creation.
struct Params {
  float alpha = 0;
  float beta = 0;
};


// Each op is a function of x, in the compute type (float for the 16-bit
// floats, T otherwise), and the parsed parameters.
template <typename C>
C SoftplusOf(C x) {  // log(1 + e^x) without overflow
  return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}
constexpr auto kSin = [](auto x, const Params&) { return std::sin(x); };
constexpr auto kCos = [](auto x, const Params&) { return std::cos(x); };
constexpr auto kTan = [](auto x, const Params&) { return std::tan(x); };
constexpr auto kAsin = [](auto x, const Params&) { return std::asin(x); };
constexpr auto kAcos = [](auto x, const Params&) { return std::acos(x); };
constexpr auto kAtan = [](auto x, const Params&) { return std::atan(x); };
constexpr auto kSinh = [](auto x, const Params&) { return std::sinh(x); };
constexpr auto kCosh = [](auto x, const Params&) { return std::cosh(x); };
constexpr auto kAsinh = [](auto x, const Params&) { return std::asinh(x); };
constexpr auto kAcosh = [](auto x, const Params&) { return std::acosh(x); };
constexpr auto kAtanh = [](auto x, const Params&) { return std::atanh(x); };
constexpr auto kFloor = [](auto x, const Params&) { return std::floor(x); };
constexpr auto kCeil = [](auto x, const Params&) { return std::ceil(x); };
// Halves to even, as ONNX and NumPy round (the default rounding mode).
constexpr auto kRound = [](auto x, const Params&) { return std::nearbyint(x); };
constexpr auto kSign = [](auto x, const Params&) {
  using C = decltype(x);
  return static_cast<C>((x > C(0)) - (x < C(0)));
};
constexpr auto kSoftplus = [](auto x, const Params&) { return SoftplusOf(x); };
constexpr auto kSoftsign = [](auto x, const Params&) {
  return x / (decltype(x)(1) + std::abs(x));
};
constexpr auto kMish = [](auto x, const Params&) {
  return x * std::tanh(SoftplusOf(x));
};
// x * clamp(x / 6 + 1/2, 0, 1).
constexpr auto kHardSwish = [](auto x, const Params&) {
  using C = decltype(x);
  return x * std::fmax(C(0), std::fmin(C(1), x / C(6) + C(0.5)));
};
constexpr auto kHardSigmoid = [](auto x, const Params& p) {
  using C = decltype(x);
  return std::fmax(C(0), std::fmin(C(1), C(p.alpha) * x + C(p.beta)));
};
constexpr auto kElu = [](auto x, const Params& p) {
  using C = decltype(x);
  return x >= C(0) ? x : C(p.alpha) * std::expm1(x);
};
// beta holds Selu's gamma.
constexpr auto kSelu = [](auto x, const Params& p) {
  using C = decltype(x);
  return C(p.beta) * (x > C(0) ? x : C(p.alpha) * std::expm1(x));
};
constexpr auto kCelu = [](auto x, const Params& p) {
  using C = decltype(x);
  return std::fmax(C(0), x) +
         std::fmin(C(0), C(p.alpha) * std::expm1(x / C(p.alpha)));
};
constexpr auto kThresholdedRelu = [](auto x, const Params& p) {
  using C = decltype(x);
  return x > C(p.alpha) ? x : C(0);
};

enum class MathFamily { kArith, kFloat };

// The float attributes an op reads into Params.
enum class ParamSet { kNone, kAlpha, kAlphaBeta, kAlphaGamma };

template <auto kFn, MathFamily kFamily, ParamSet kAttrs = ParamSet::kNone>
class MathKernel final : public OpKernel {
 public:
  using Attrs = Params;
  static absl::StatusOr<Params> ParseAttrs(const Node& node) {
    Params a;
    if constexpr (kAttrs != ParamSet::kNone) {
      ASSIGN_OR_RETURN(a.alpha, node.attrs().GetFloat("alpha"));
    }
    if constexpr (kAttrs == ParamSet::kAlphaBeta) {
      ASSIGN_OR_RETURN(a.beta, node.attrs().GetFloat("beta"));
    }
    if constexpr (kAttrs == ParamSet::kAlphaGamma) {
      ASSIGN_OR_RETURN(a.beta, node.attrs().GetFloat("gamma"));
    }
    return a;
  }
  MathKernel(const Node& node, Params attrs) : OpKernel(node), p_(attrs) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    RETURN_IF_ERROR(CheckDtype(x, node().output_dtype(0), "input x"));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    auto run = [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      using C = typename ComputeType<T>::type;
      const T* in = x.data<T>();
      T* out = y->data<T>();
      const Params p = p_;
      ParallelFor(*ctx, x.NumElements(), 20,
                  [in, out, p](int64_t b, int64_t e) {
                    for (int64_t i = b; i < e; ++i) {
                      out[i] = static_cast<T>(kFn(C(in[i]), p));
                    }
                  });
      return absl::OkStatus();
    };
    if constexpr (kFamily == MathFamily::kArith) {
      return VisitArith(x.dtype(), run);
    } else {
      return VisitFloat(x.dtype(), run);
    }
  }

 private:
  const Params p_;
};

template <auto kFn, ParamSet kAttrs = ParamSet::kNone>
void RegisterFloat(KernelRegistry* r, const char* op) {
  r->Register(
      CpuKernel(op, {{"T", CpuFloatTypes()}},
                MakeKernel<MathKernel<kFn, MathFamily::kFloat, kAttrs>>));
}

}  // namespace

void RegisterMathKernels(KernelRegistry* r) {
  RegisterFloat<kSin>(r, "Sin");
  RegisterFloat<kCos>(r, "Cos");
  RegisterFloat<kTan>(r, "Tan");
  RegisterFloat<kAsin>(r, "Asin");
  RegisterFloat<kAcos>(r, "Acos");
  RegisterFloat<kAtan>(r, "Atan");
  RegisterFloat<kSinh>(r, "Sinh");
  RegisterFloat<kCosh>(r, "Cosh");
  RegisterFloat<kAsinh>(r, "Asinh");
  RegisterFloat<kAcosh>(r, "Acosh");
  RegisterFloat<kAtanh>(r, "Atanh");
  RegisterFloat<kFloor>(r, "Floor");
  RegisterFloat<kCeil>(r, "Ceil");
  RegisterFloat<kRound>(r, "Round");
  r->Register(CpuKernel("Sign", {{"T", CpuArithTypes()}},
                        MakeKernel<MathKernel<kSign, MathFamily::kArith>>));
  RegisterFloat<kSoftplus>(r, "Softplus");
  RegisterFloat<kSoftsign>(r, "Softsign");
  RegisterFloat<kMish>(r, "Mish");
  RegisterFloat<kHardSwish>(r, "HardSwish");
  RegisterFloat<kHardSigmoid, ParamSet::kAlphaBeta>(r, "HardSigmoid");
  RegisterFloat<kElu, ParamSet::kAlpha>(r, "Elu");
  RegisterFloat<kSelu, ParamSet::kAlphaGamma>(r, "Selu");
  RegisterFloat<kCelu, ParamSet::kAlpha>(r, "Celu");
  RegisterFloat<kThresholdedRelu, ParamSet::kAlpha>(r, "ThresholdedRelu");
}

}  // namespace sluice::cpu
