// Cast between float32/64, float16, bfloat16, int8, uint8, int32, int64 and
// bool. Float to int truncates toward zero (NaN gives 0; values beyond the
// range saturate); int to a narrower int wraps; to bool is x != 0.
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/status_macros.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {
namespace {

template <typename Dst, typename Src>
Dst CastOne(Src v) {
  using C = typename ComputeType<Src>::type;  // widen 16-bit floats
  const C c = static_cast<C>(v);
  if constexpr (std::is_same_v<Dst, bool>) {
    return c != C(0);
  } else if constexpr (std::is_integral_v<Dst> && std::is_floating_point_v<C>) {
    if (std::isnan(c)) return 0;
    // Compare in double: every int32 is exact there, and 2^63 is too.
    const double d = static_cast<double>(c);
    constexpr double kEnd =
        static_cast<double>(std::numeric_limits<Dst>::max()) + 1.0;
    constexpr double kMin = static_cast<double>(std::numeric_limits<Dst>::min());
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

// VisitComparable's dtypes and the 8-bit integers.
template <typename F>
absl::Status VisitCastable(DataType dtype, F&& f) {
  if (dtype == DT_INT8) return f(TypeTag<int8_t>{});
  if (dtype == DT_UINT8) return f(TypeTag<uint8_t>{});
  return VisitComparable(dtype, f);
}

class CastKernel final : public OpKernel {
 public:
  struct Attrs {
    DataType src = DT_INVALID;
    DataType dst = DT_INVALID;
  };
  static absl::StatusOr<Attrs> ParseAttrs(const Node& node) {
    Attrs a;
    ASSIGN_OR_RETURN(a.src, node.attrs().GetType("SrcT"));
    ASSIGN_OR_RETURN(a.dst, node.attrs().GetType("DstT"));
    return a;
  }
  CastKernel(const Node& node, Attrs attrs)
      : OpKernel(node), attrs_(std::move(attrs)) {}

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const DataType src = attrs_.src;
    const DataType dst = attrs_.dst;
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
        ParallelFor(*ctx, x.NumElements(), 2, [=](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) out[i] = CastOne<D, S>(in[i]);
        });
        return absl::OkStatus();
      });
    });
  }

 private:
  const Attrs attrs_;
};

}  // namespace

void RegisterCastKernels(KernelRegistry* r) {
  r->Register(CpuKernel("Cast",
                        {{"SrcT", CpuCastTypes()}, {"DstT", CpuCastTypes()}},
                        MakeKernel<CastKernel>));
}

}  // namespace sluice::cpu
