// Binary elementwise kernels with NumPy broadcasting: Add, Sub, Mul, Div,
// Pow, Mod, FMod, Maximum, Minimum, and the comparisons Equal, Less, Greater.
// Same-shape and scalar operands take a flat loop; everything else walks a
// BroadcastPlan row by row. float16/bfloat16 compute in float; signed
// integer arithmetic wraps (it is done in the unsigned type). Types: the
// arithmetic ones plus int8, int16, uint8/16/32/64 (and bool for Equal).
#include <cmath>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

// The unsigned type integer arithmetic wraps in: at least unsigned int, so
// that 16-bit operands are not promoted to (overflowing) int.
template <typename C>
struct UnsignedWide {
  using type = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned,
                                  std::make_unsigned_t<C>>;
};
template <typename C>
using Wide = std::conditional_t<std::is_integral_v<C> && !std::is_same_v<C, bool>,
                                UnsignedWide<C>, std::type_identity<C>>;

template <typename C>
C WrapAdd(C a, C b) {
  using U = typename Wide<C>::type;
  return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
}
template <typename C>
C WrapSub(C a, C b) {
  using U = typename Wide<C>::type;
  return static_cast<C>(static_cast<U>(a) - static_cast<U>(b));
}
template <typename C>
C WrapMul(C a, C b) {
  using U = typename Wide<C>::type;
  return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
}

// Integer power by squaring. REQUIRES: e >= 0 (checked by the kernel).
template <typename C>
C IntPow(C base, C e) {
  C result = 1;
  while (e > 0) {
    if (e & 1) result = WrapMul(result, base);
    base = WrapMul(base, base);
    e >>= 1;
  }
  return result;
}

struct AddOp {
  template <typename C> static C Apply(C a, C b) { return WrapAdd(a, b); }
};
struct SubOp {
  template <typename C> static C Apply(C a, C b) { return WrapSub(a, b); }
};
struct MulOp {
  template <typename C> static C Apply(C a, C b) { return WrapMul(a, b); }
};
struct DivOp {
  // Integers: truncation toward zero; b == 0 is rejected before the loop.
  template <typename C> static C Apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return WrapSub(C(0), a);  // INT_MIN / -1 wraps
      }
      return a / b;
    } else {
      return a / b;
    }
  }
};
struct PowOp {
  template <typename C> static C Apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      return IntPow(a, b);
    } else {
      return std::pow(a, b);
    }
  }
};
// Floor modulo, the result taking the divisor's sign (Python's %, ONNX Mod
// with fmod=0); FMod truncates, the result taking the dividend's sign (C's
// fmod and %, ONNX Mod with fmod=1). Integer b == 0 is rejected before the
// loop.
struct FModOp {
  template <typename C> static C Apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return C(0);  // INT_MIN % -1 overflows
      }
      return static_cast<C>(a % b);
    } else {
      return std::fmod(a, b);
    }
  }
};
struct ModOp {
  template <typename C> static C Apply(C a, C b) {
    const C r = FModOp::Apply(a, b);
    if constexpr (std::is_unsigned_v<C>) {
      return r;
    } else {
      return (r != C(0) && ((r < C(0)) != (b < C(0)))) ? C(r + b) : r;
    }
  }
};
// NaN-propagating, like NumPy.
struct MaximumOp {
  template <typename C> static C Apply(C a, C b) {
    return (a >= b || a != a) ? a : b;
  }
};
struct MinimumOp {
  template <typename C> static C Apply(C a, C b) {
    return (a <= b || a != a) ? a : b;
  }
};
struct EqualOp {
  template <typename C> static bool Apply(C a, C b) { return a == b; }
};
struct LessOp {
  template <typename C> static bool Apply(C a, C b) { return a < b; }
};
struct GreaterOp {
  template <typename C> static bool Apply(C a, C b) { return a > b; }
};

// z[j] = Op(x[j * sx], y[j * sy]) for j in [0, n); sx, sy are 0 or 1. Each
// stride combination has its own loop so the compiler can vectorise it.
template <typename Op, typename T, typename R>
void BinaryRow(const T* x, int64_t sx, const T* y, int64_t sy, R* z,
               int64_t n) {
  using C = typename ComputeType<T>::type;
  auto f = [](C a, C b) { return static_cast<R>(Op::Apply(a, b)); };
  if (sx == 1 && sy == 1) {
    for (int64_t j = 0; j < n; ++j) z[j] = f(C(x[j]), C(y[j]));
  } else if (sx == 0 && sy == 1) {
    const C a = C(x[0]);
    for (int64_t j = 0; j < n; ++j) z[j] = f(a, C(y[j]));
  } else if (sx == 1 && sy == 0) {
    const C b = C(y[0]);
    for (int64_t j = 0; j < n; ++j) z[j] = f(C(x[j]), b);
  } else if (sx == 0 && sy == 0) {
    const R v = f(C(x[0]), C(y[0]));
    for (int64_t j = 0; j < n; ++j) z[j] = v;
  } else {
    for (int64_t j = 0; j < n; ++j) z[j] = f(C(x[j * sx]), C(y[j * sy]));
  }
}

// Integer Div rejects zero divisors and integer Pow negative exponents
// before any output is written.
template <typename Op, typename T>
absl::Status CheckOperands(const Tensor& y) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    const T* v = y.data<T>();
    for (int64_t i = 0; i < y.NumElements(); ++i) {
      if ((std::is_same_v<Op, DivOp> || std::is_same_v<Op, ModOp> ||
           std::is_same_v<Op, FModOp>) &&
          v[i] == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "integer division by zero (divisor element ", i, " is 0)"));
      }
      if (std::is_same_v<Op, PowOp> && std::is_signed_v<T> && v[i] < T(0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "integer Pow with negative exponent ", v[i], " (element ", i,
            "); cast to a float type first"));
      }
    }
  }
  return absl::OkStatus();
}

template <typename Op, typename T, typename R>
void RunBinary(const OpKernelContext& ctx, const Tensor& x, const Tensor& y,
               Tensor* z) {
  const T* xp = x.data<T>();
  const T* yp = y.data<T>();
  R* zp = z->data<R>();
  const int64_t n = z->NumElements();
  if (n == 0) return;
  const int64_t sx = x.NumElements() == n ? 1 : 0;
  const int64_t sy = y.NumElements() == n ? 1 : 0;
  // An operand with all n elements has the output's layout (broadcasting
  // only added 1s); one with a single element is a scalar.
  if ((sx == 1 || x.NumElements() == 1) && (sy == 1 || y.NumElements() == 1)) {
    ParallelFor(ctx, n, 1, [=](int64_t b, int64_t e) {
      BinaryRow<Op, T, R>(xp + b * sx, sx, yp + b * sy, sy, zp + b, e - b);
    });
    return;
  }
  BroadcastPlan<2> plan(z->shape(), {&x.shape(), &y.shape()});
  const int64_t inner = plan.inner();
  const int64_t isx = plan.inner_stride(0), isy = plan.inner_stride(1);
  ParallelFor(ctx, plan.rows(), static_cast<double>(inner),
              [&](int64_t b, int64_t e) {
                plan.ForEachRow(b, e, [&](int64_t o, const int64_t* in) {
                  BinaryRow<Op, T, R>(xp + in[0], isx, yp + in[1], isy,
                                      zp + o, inner);
                });
              });
}

enum class BinaryFamily { kArith, kComparable };

// The binary kernels also take int8, int16 and the unsigned integers (ONNX
// models compare and do arithmetic on them); the other families do not yet.
const std::vector<DataType>& BinaryTypes(bool with_bool) {
  static const auto* arith = [] {
    auto* t = new std::vector<DataType>(CpuArithTypes());
    for (DataType d : {DT_INT8, DT_INT16, DT_UINT8, DT_UINT16, DT_UINT32,
                       DT_UINT64}) {
      t->push_back(d);
    }
    return t;
  }();
  static const auto* comparable = [] {
    auto* t = new std::vector<DataType>(*arith);
    t->push_back(DT_BOOL);
    return t;
  }();
  return with_bool ? *comparable : *arith;
}

template <bool kWithBool, typename F>
absl::Status VisitBinary(DataType dtype, F&& f) {
  switch (dtype) {
    case DT_INT8: return f(TypeTag<int8_t>{});
    case DT_INT16: return f(TypeTag<int16_t>{});
    case DT_UINT8: return f(TypeTag<uint8_t>{});
    case DT_UINT16: return f(TypeTag<uint16_t>{});
    case DT_UINT32: return f(TypeTag<uint32_t>{});
    case DT_UINT64: return f(TypeTag<uint64_t>{});
    default: break;
  }
  if constexpr (kWithBool) {
    return VisitComparable(dtype, f);
  } else {
    return VisitArith(dtype, f);
  }
}

template <typename Op, BinaryFamily kFamily, bool kBoolOut>
class BinaryKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType t = DT_INVALID;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
    return a;
  }
  BinaryKernel(const Node& node, Attrs attrs) : OpKernel(node), t_(attrs.t) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    const DataType t = t_;
    RETURN_IF_ERROR(CheckDtype(x, t, "input x"));
    RETURN_IF_ERROR(CheckDtype(y, t, "input y"));
    ASSIGN_OR_RETURN(Shape out_shape, BroadcastShapes({&x.shape(), &y.shape()}));
    auto run = [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      using R = std::conditional_t<kBoolOut, bool, T>;
      RETURN_IF_ERROR((CheckOperands<Op, T>(y)));
      ASSIGN_OR_RETURN(Tensor * z, ctx->allocate_output(0, out_shape));
      RunBinary<Op, T, R>(*ctx, x, y, z);
      return absl::OkStatus();
    };
    if constexpr (kFamily == BinaryFamily::kComparable) {
      return VisitBinary</*kWithBool=*/true>(t, run);
    } else {
      return VisitBinary</*kWithBool=*/false>(t, run);
    }
  }

 private:
  const DataType t_;
};

template <typename Op>
void RegisterArith(KernelRegistry* r, const char* op) {
  r->Register(
      CpuKernel(op, {{"T", BinaryTypes(false)}},
                MakeKernel<BinaryKernel<Op, BinaryFamily::kArith, false>>));
}

}  // namespace

void RegisterBinaryKernels(KernelRegistry* r) {
  RegisterArith<AddOp>(r, "Add");
  RegisterArith<SubOp>(r, "Sub");
  RegisterArith<MulOp>(r, "Mul");
  RegisterArith<DivOp>(r, "Div");
  RegisterArith<PowOp>(r, "Pow");
  RegisterArith<ModOp>(r, "Mod");
  RegisterArith<FModOp>(r, "FMod");
  RegisterArith<MaximumOp>(r, "Maximum");
  RegisterArith<MinimumOp>(r, "Minimum");
  r->Register(CpuKernel(
      "Equal", {{"T", BinaryTypes(true)}},
      MakeKernel<BinaryKernel<EqualOp, BinaryFamily::kComparable, true>>));
  r->Register(
      CpuKernel("Less", {{"T", BinaryTypes(false)}},
                MakeKernel<BinaryKernel<LessOp, BinaryFamily::kArith, true>>));
  r->Register(CpuKernel(
      "Greater", {{"T", BinaryTypes(false)}},
      MakeKernel<BinaryKernel<GreaterOp, BinaryFamily::kArith, true>>));
}

}  // namespace sluice::cpu
