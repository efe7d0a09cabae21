// Cast between any two dtypes. Float to int truncates toward zero (NaN gives
// 0; values beyond the range saturate), except to int4/uint4/int2/uint2,
// which wrap to their low bits as ml_dtypes does; int to a narrower int wraps;
// to bool is x != 0. To the float8 types: round to nearest even, with ONNX's
// `saturate` (default 1: out-of-range values and infinities clamp to the
// largest finite value; 0: they become NaN, or infinity for E5M2); to E8M0
// by `round_mode` (up, down, nearest). See core/small_types.h.
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/status_macros.h"
#include "kernels/cast_params.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/launch_kernel.h"

namespace sluice::cpu {
namespace {

// ONNX Cast's saturate and round_mode attributes (kernels/cast_params.h).
using CastOptions = CastAttrs;

// A standard C++ value as double (half and bfloat16 through float).
template <typename Src>
double AsDouble(Src v) {
  using C = typename ComputeType<Src>::type;
  return static_cast<double>(static_cast<C>(v));
}

template <typename Dst, typename Src>
Dst CastOne(Src v, const CastOptions& o) {
  if constexpr (kIsSmallFloat<Src>) {
    // Every small float is exact in float.
    return CastOne<Dst, float>(static_cast<float>(v), o);
  } else if constexpr (kIsSmallInt<Src>) {
    return CastOne<Dst, int64_t>(static_cast<int64_t>(v.value), o);
  } else if constexpr (std::is_same_v<Dst, float8_e8m0>) {
    return Dst::FromBits(
        EncodeE8M0(static_cast<float>(AsDouble(v)), o.saturate, o.round));
  } else if constexpr (kIsSmallFloat<Dst>) {
    // float16 -> float -> double and float -> double are exact, so this
    // rounds once, as ml_dtypes does.
    return Dst::FromBits(EncodeSmallFloat(AsDouble(v),
                                          Dst::kFormat, o.saturate));
  } else if constexpr (kIsSmallInt<Dst>) {
    return Dst(v);  // truncates, then wraps to the low bits (ml_dtypes)
  } else {
    using C = typename ComputeType<Src>::type;  // widen 16-bit floats
    const C c = static_cast<C>(v);
    if constexpr (std::is_same_v<Dst, bool>) {
      return c != C(0);
    } else if constexpr (std::is_integral_v<Dst> &&
                         std::is_floating_point_v<C>) {
      if (std::isnan(c)) return 0;
      // Compare in double: every int32 is exact there, and 2^63 is too.
      const double d = static_cast<double>(c);
      constexpr double kEnd =
          static_cast<double>(std::numeric_limits<Dst>::max()) + 1.0;
      constexpr double kMin =
          static_cast<double>(std::numeric_limits<Dst>::min());
      if (d >= kEnd) return std::numeric_limits<Dst>::max();
      if (d <= kMin) return std::numeric_limits<Dst>::min();
      return static_cast<Dst>(d);
    } else if constexpr (std::is_same_v<Dst, half> ||
                         std::is_same_v<Dst, bfloat16>) {
      return static_cast<Dst>(static_cast<float>(c));
    } else {
      return static_cast<Dst>(c);
    }
  }
}

// Calls f(TypeTag<T>{}) with the C++ type of any dtype.
template <typename F>
absl::Status VisitCastable(DataType dtype, F&& f) {
  absl::Status status = UnsupportedDtype(dtype);
  SLUICE_SWITCH_DTYPE(dtype, status = f(TypeTag<T>{}), {});
  return status;
}

class CastKernel final : public LaunchKernel<CastAttrs, ParseCastAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const DataType src = attrs().src;
    const DataType dst = attrs().dst;
    RETURN_IF_ERROR(CheckDtype(x, src, "input x"));
    if (src == dst) {
      ctx->set_output(0, x);
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape(), dst));
    return VisitCastable(src, [&](auto src_tag) {
      using S = typename decltype(src_tag)::type;
      return VisitCastable(dst, [&](auto dst_tag) {
        using D = typename decltype(dst_tag)::type;
        const S* in = x.data<S>();
        D* out = y->data<D>();
        const CastOptions o = attrs();
        ParallelFor(*ctx, x.NumElements(), 2, [=](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) out[i] = CastOne<D, S>(in[i], o);
        });
        return absl::OkStatus();
      });
    });
  }
};

}  // namespace

void RegisterCastKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Cast",
                        {{"SrcT", CpuCastTypes()}, {"DstT", CpuCastTypes()}},
                        MakeKernel<CastKernel>));
}

}  // namespace sluice::cpu
