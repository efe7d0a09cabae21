// BitShift, BitwiseAnd/Or/Xor (NumPy broadcasting), BitwiseNot and BitCast.
// The integer kernels take every dtype whose C++ type is a standard integer
// (int8 to int64, uint8 to uint64; type_visit.h); BitCast copies bytes between any two dtypes of one width.
#include <cstring>
#include <type_traits>

#include "core/status_macros.h"
#include "kernels/bitwise_params.h"
#include "kernels/launch_kernel.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/kernel_util.h"
#include "kernels/cpu/type_visit.h"

namespace sluice::cpu {
namespace {

// Shifts by the amount's bits read as unsigned, so a negative amount is a
// huge one; anything of the type's width or more shifts every bit out.
template <bool kLeft>
struct ShiftOp {
  template <typename T>
  static T Apply(T x, T y) {
    using U = std::make_unsigned_t<T>;
    constexpr U kBits = sizeof(T) * 8;
    const U s = static_cast<U>(y);
    if constexpr (kLeft) {
      return s >= kBits ? T(0) : static_cast<T>(static_cast<U>(x) << s);
    } else if constexpr (std::is_signed_v<T>) {
      return s >= kBits ? T(x < 0 ? -1 : 0) : static_cast<T>(x >> s);
    } else {
      return s >= kBits ? T(0) : static_cast<T>(x >> s);
    }
  }
};
struct AndOp {
  template <typename T> static T Apply(T x, T y) { return x & y; }
};
struct OrOp {
  template <typename T> static T Apply(T x, T y) { return x | y; }
};
struct XorOp {
  template <typename T> static T Apply(T x, T y) { return x ^ y; }
};

// z = Op(x, y) with NumPy broadcasting, row by row.
template <typename Op, typename T>
void RunBroadcast(const OpKernelContext& ctx, const Tensor& x, const Tensor& y,
                  Tensor* z) {
  const T* xp = x.data<T>();
  const T* yp = y.data<T>();
  T* zp = z->data<T>();
  if (z->NumElements() == 0) return;
  BroadcastPlan<2> plan(z->shape(), {&x.shape(), &y.shape()});
  const int64_t inner = plan.inner();
  const int64_t sx = plan.inner_stride(0), sy = plan.inner_stride(1);
  ParallelFor(ctx, plan.rows(), static_cast<double>(inner),
              [&](int64_t b, int64_t e) {
                plan.ForEachRow(b, e, [&](int64_t o, const int64_t* in) {
                  const T* a = xp + in[0];
                  const T* c = yp + in[1];
                  for (int64_t j = 0; j < inner; ++j) {
                    zp[o + j] = Op::Apply(a[j * sx], c[j * sy]);
                  }
                });
              });
}

template <typename Op>
class BitBinaryKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    RETURN_IF_ERROR(CheckDtype(y, x.dtype(), "input y"));
    ASSIGN_OR_RETURN(Shape out_shape,
                     BroadcastShapes({&x.shape(), &y.shape()}));
    ASSIGN_OR_RETURN(Tensor * z, ctx->allocate_output(0, out_shape));
    return VisitStdInteger(x.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      RunBroadcast<Op, T>(*ctx, x, y, z);
      return absl::OkStatus();
    });
  }
};

class BitShiftKernel final : public LaunchKernel<BitShiftAttrs, ParseBitShiftAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    const Tensor& y = ctx->input(1);
    RETURN_IF_ERROR(CheckDtype(y, x.dtype(), "input y"));
    ASSIGN_OR_RETURN(Shape out_shape,
                     BroadcastShapes({&x.shape(), &y.shape()}));
    ASSIGN_OR_RETURN(Tensor * z, ctx->allocate_output(0, out_shape));
    return VisitStdInteger(x.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      if (attrs().left) {
        RunBroadcast<ShiftOp<true>, T>(*ctx, x, y, z);
      } else {
        RunBroadcast<ShiftOp<false>, T>(*ctx, x, y, z);
      }
      return absl::OkStatus();
    });
  }
};

class BitwiseNotKernel final : public OpKernel {
 public:
  using OpKernel::OpKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, x.shape()));
    return VisitStdInteger(x.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* in = x.data<T>();
      T* out = y->data<T>();
      ParallelFor(*ctx, x.NumElements(), 1, [=](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) out[i] = static_cast<T>(~in[i]);
      });
      return absl::OkStatus();
    });
  }
};

// The bytes of x as DstT. A bool output holds only 0 and 1, so a nonzero
// byte becomes true (1).
class BitCastKernel final : public LaunchKernel<BitCastAttrs, ParseBitCastAttrs> {
 public:
  using LaunchKernel::LaunchKernel;

  absl::Status Compute(OpKernelContext* ctx) override {
    RETURN_IF_ERROR(CheckHostInputs(*ctx));
    const Tensor& x = ctx->input(0);
    ASSIGN_OR_RETURN(BitCastPlan p, PlanBitCast(attrs(), x));
    ASSIGN_OR_RETURN(Tensor * y, ctx->allocate_output(0, p.out_shape, p.dst));
    if (p.dst == DT_BOOL) {
      const uint8_t* in = static_cast<const uint8_t*>(x.raw_data());
      bool* out = y->data<bool>();
      for (int64_t i = 0; i < p.bytes; ++i) out[i] = in[i] != 0;
    } else if (p.bytes > 0) {
      std::memcpy(y->raw_data(), x.raw_data(), p.bytes);
    }
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterBitwiseKernels(KernelRegistry* r) {
  r->Register(CpuKernel("BitShift", {{"T", StdIntegerTypes()}},
                        MakeKernel<BitShiftKernel>));
  r->Register(CpuKernel("BitwiseAnd", {{"T", StdIntegerTypes()}},
                        MakeKernel<BitBinaryKernel<AndOp>>));
  r->Register(CpuKernel("BitwiseOr", {{"T", StdIntegerTypes()}},
                        MakeKernel<BitBinaryKernel<OrOp>>));
  r->Register(CpuKernel("BitwiseXor", {{"T", StdIntegerTypes()}},
                        MakeKernel<BitBinaryKernel<XorOp>>));
  r->Register(CpuKernel("BitwiseNot", {{"T", StdIntegerTypes()}},
                        MakeKernel<BitwiseNotKernel>));
  r->Register(CpuKernel("BitCast", {{"SrcT", CpuAllTypes()},
                                    {"DstT", CpuAllTypes()}},
                        MakeKernel<BitCastKernel>));
}

}  // namespace sluice::cpu
