// Elementwise CUDA kernels: one thread per element in a grid-stride loop;
// 16-bit floats are computed in float.
#include <cmath>
#include <type_traits>

#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/elementwise.h"

namespace sluice::cuda {
namespace {

// log(1 + e^x) without overflow, as the CPU's Softplus.
template <typename W>
__device__ __forceinline__ W SoftplusOf(W x) {
  return x > W(0) ? x + log1p(exp(-x)) : log1p(exp(x));
}

// The trigonometric and hyperbolic functions, rounding and the
// parameter-free activations (floats only).
template <UnaryOp kOp, typename W>
__device__ __forceinline__ W ApplyMath(W x) {
  if constexpr (kOp == UnaryOp::kSin) return sin(x);
  if constexpr (kOp == UnaryOp::kCos) return cos(x);
  if constexpr (kOp == UnaryOp::kTan) return tan(x);
  if constexpr (kOp == UnaryOp::kAsin) return asin(x);
  if constexpr (kOp == UnaryOp::kAcos) return acos(x);
  if constexpr (kOp == UnaryOp::kAtan) return atan(x);
  if constexpr (kOp == UnaryOp::kSinh) return sinh(x);
  if constexpr (kOp == UnaryOp::kCosh) return cosh(x);
  if constexpr (kOp == UnaryOp::kAsinh) return asinh(x);
  if constexpr (kOp == UnaryOp::kAcosh) return acosh(x);
  if constexpr (kOp == UnaryOp::kAtanh) return atanh(x);
  if constexpr (kOp == UnaryOp::kFloor) return floor(x);
  if constexpr (kOp == UnaryOp::kCeil) return ceil(x);
  if constexpr (kOp == UnaryOp::kRound) return rint(x);  // halves to even
  if constexpr (kOp == UnaryOp::kSoftplus) return SoftplusOf(x);
  if constexpr (kOp == UnaryOp::kSoftsign) return x / (W(1) + fabs(x));
  if constexpr (kOp == UnaryOp::kMish) return x * tanh(SoftplusOf(x));
  if constexpr (kOp == UnaryOp::kHardSwish) {
    return x * fmax(W(0), fmin(W(1), x / W(6) + W(0.5)));
  }
  return x;
}

// The activations with float attributes, written as the CPU writes them.
template <UnaryOp kOp, typename W>
__device__ __forceinline__ W ApplyActivation(W x, UnaryParams p) {
  const W alpha = W(p.alpha);
  const W beta = W(p.beta);
  if constexpr (kOp == UnaryOp::kHardSigmoid) {
    return fmax(W(0), fmin(W(1), alpha * x + beta));
  }
  if constexpr (kOp == UnaryOp::kElu) return x >= W(0) ? x : alpha * expm1(x);
  if constexpr (kOp == UnaryOp::kSelu) {  // beta holds gamma
    return beta * (x > W(0) ? x : alpha * expm1(x));
  }
  if constexpr (kOp == UnaryOp::kCelu) {
    return fmax(W(0), x) + fmin(W(0), alpha * expm1(x / alpha));
  }
  if constexpr (kOp == UnaryOp::kThresholdedRelu) return x > alpha ? x : W(0);
  return x;
}

template <UnaryOp kOp, typename W>
__device__ __forceinline__ W ApplyUnary(W x, UnaryParams p) {
  if constexpr (kOp == UnaryOp::kNeg) return -x;
  if constexpr (kOp == UnaryOp::kAbs) return x < W(0) ? -x : x;
  if constexpr (kOp == UnaryOp::kRelu) return x > W(0) ? x : W(0);
  if constexpr (kOp == UnaryOp::kSign) return W((x > W(0)) - (x < W(0)));
  if constexpr (std::is_floating_point_v<W>) {
    if constexpr (kOp == UnaryOp::kExp) return exp(x);
    if constexpr (kOp == UnaryOp::kLog) return log(x);
    if constexpr (kOp == UnaryOp::kSqrt) return sqrt(x);
    if constexpr (kOp == UnaryOp::kRsqrt) return W(1) / sqrt(x);
    if constexpr (kOp == UnaryOp::kTanh) return tanh(x);
    if constexpr (kOp == UnaryOp::kSigmoid) return W(1) / (W(1) + exp(-x));
    if constexpr (kOp == UnaryOp::kErf) return erf(x);
    if constexpr (kOp == UnaryOp::kGeluErf) {
      return W(0.5) * x * (W(1) + erf(x * W(0.70710678118654752440)));
    }
    if constexpr (kOp == UnaryOp::kGeluTanh) {
      const W k = W(0.79788456080286535588);  // sqrt(2 / pi)
      return W(0.5) * x * (W(1) + tanh(k * (x + W(0.044715) * x * x * x)));
    }
    if constexpr (kOp >= UnaryOp::kSin && kOp <= UnaryOp::kHardSwish) {
      return ApplyMath<kOp>(x);
    }
    if constexpr (kOp >= UnaryOp::kHardSigmoid) {
      return ApplyActivation<kOp>(x, p);
    }
  }
  return x;
}

template <UnaryOp kOp, typename T>
static __global__ void UnaryKernel(const T* x, T* y, int64_t n,
                                   UnaryParams p) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = FromWide<T>(ApplyUnary<kOp>(ToWide(x[i]), p));
  }
}

// Integer semantics follow the CPU kernels: arithmetic wraps (integers are
// computed in int64, uint64 in uint64, and narrowed; sums and products in
// uint64 where int64 could overflow), division truncates toward zero, Mod
// is floor modulo and FMod truncated modulo. A zero divisor or negative
// exponent, which the operand check rejects first, gives 0 here rather
// than a fault.
template <typename W>
__device__ __forceinline__ W WrapNeg(W a) {
  return static_cast<W>(0ull - static_cast<unsigned long long>(a));
}

template <typename W>
__device__ __forceinline__ W IntPow(W base, W e) {
  if constexpr (std::is_signed_v<W>) {
    if (e < W(0)) return W(0);
  }
  unsigned long long result = 1;
  unsigned long long b = static_cast<unsigned long long>(base);
  while (e > W(0)) {
    if (e & W(1)) result *= b;
    b *= b;
    e >>= 1;
  }
  return static_cast<W>(result);
}

template <typename W>
__device__ __forceinline__ W TruncMod(W a, W b) {
  if constexpr (std::is_integral_v<W>) {
    if (b == W(0)) return W(0);
    if constexpr (std::is_signed_v<W>) {
      if (b == W(-1)) return W(0);  // INT64_MIN % -1 traps
    }
    return a % b;
  } else {
    return fmod(a, b);
  }
}

template <BinaryOp kOp, typename W>
__device__ __forceinline__ auto ApplyBinary(W a, W b) {
  constexpr bool kInt = std::is_integral_v<W>;
  using U = unsigned long long;
  if constexpr (kOp == BinaryOp::kAdd) {
    if constexpr (kInt) return static_cast<W>(U(a) + U(b));
    if constexpr (!kInt) return a + b;
  }
  if constexpr (kOp == BinaryOp::kSub) {
    if constexpr (kInt) return static_cast<W>(U(a) - U(b));
    if constexpr (!kInt) return a - b;
  }
  if constexpr (kOp == BinaryOp::kMul) {
    if constexpr (kInt) return static_cast<W>(U(a) * U(b));
    if constexpr (!kInt) return a * b;
  }
  if constexpr (kOp == BinaryOp::kDiv) {
    if constexpr (kInt) {
      if (b == W(0)) return W(0);
      if constexpr (std::is_signed_v<W>) {
        if (b == W(-1)) return WrapNeg(a);
      }
    }
    return a / b;
  }
  if constexpr (kOp == BinaryOp::kPow) {
    if constexpr (kInt) {
      return IntPow(a, b);
    } else {
      return pow(a, b);
    }
  }
  if constexpr (kOp == BinaryOp::kFMod) return TruncMod(a, b);
  if constexpr (kOp == BinaryOp::kMod) {  // the remainder takes b's sign
    const W r = TruncMod(a, b);
    if constexpr (std::is_unsigned_v<W>) return r;
    if constexpr (std::is_signed_v<W>) {
      return (r != W(0) && ((r < W(0)) != (b < W(0)))) ? W(r + b) : r;
    }
  }
  if constexpr (kOp == BinaryOp::kMaximum) return MaxOp()(a, b);
  if constexpr (kOp == BinaryOp::kMinimum) {
    if (a != a) return a;
    if (b != b) return b;
    return a < b ? a : b;
  }
  if constexpr (kOp == BinaryOp::kEqual) return a == b;
  if constexpr (kOp == BinaryOp::kLess) return a < b;
  if constexpr (kOp == BinaryOp::kGreater) return a > b;
}

__host__ __device__ constexpr bool IsComparison(BinaryOp op) {
  return op == BinaryOp::kEqual || op == BinaryOp::kLess ||
         op == BinaryOp::kGreater;
}

template <BinaryOp kOp, typename T, bool kContiguous>
static __global__ void BinaryKernel(const T* a, const T* b,
                                    std::conditional_t<IsComparison(kOp), bool, T>* out,
                                    IndexMap map) {
  using Out = std::conditional_t<IsComparison(kOp), bool, T>;
  const int64_t n = map.num_elements;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    T va;
    T vb;
    if constexpr (kContiguous) {
      va = a[i];
      vb = b[i];
    } else {
      va = a[MapOffset(map, 0, i)];
      vb = b[MapOffset(map, 1, i)];
    }
    if constexpr (std::is_same_v<T, bool>) {
      out[i] = (va == vb);  // bool has Equal only
    } else {
      out[i] = FromWide<Out>(ApplyBinary<kOp>(ToWide(va), ToWide(vb)));
    }
  }
}

template <UnaryOp kOp, typename T>
constexpr bool UnarySupported() {
  if constexpr (kIsFloat<T>) return true;
  if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
    return kOp == UnaryOp::kNeg || kOp == UnaryOp::kAbs ||
           kOp == UnaryOp::kRelu || kOp == UnaryOp::kSign;
  }
  return false;
}

template <BinaryOp kOp, typename T>
constexpr bool BinarySupported() {
  if constexpr (std::is_same_v<T, bool>) return kOp == BinaryOp::kEqual;
  return true;  // floats and the four integer types
}

template <UnaryOp kOp>
absl::Status UnaryFor(GpuDtype dtype, const void* x, void* y, int64_t n,
                      UnaryParams p, cudaStream_t stream, bool* found) {
  absl::Status status;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (UnarySupported<kOp, T>()) {
      *found = true;
      if (n == 0) return;
      UnaryKernel<kOp, T><<<GridFor(n), kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), n, p);
      status = LaunchStatus("unary");
    }
  });
  return status;
}

template <BinaryOp kOp>
absl::Status BinaryFor(GpuDtype dtype, const void* a, const void* b, void* out,
                       const IndexMap& map, bool contiguous,
                       cudaStream_t stream, bool* found) {
  absl::Status status;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (BinarySupported<kOp, T>()) {
      *found = true;
      const int64_t n = map.num_elements;
      if (n == 0) return;
      using Out = std::conditional_t<IsComparison(kOp), bool, T>;
      const T* pa = static_cast<const T*>(a);
      const T* pb = static_cast<const T*>(b);
      Out* po = static_cast<Out*>(out);
      if (contiguous) {
        BinaryKernel<kOp, T, true><<<GridFor(n), kThreads, 0, stream>>>(pa, pb, po, map);
      } else {
        BinaryKernel<kOp, T, false><<<GridFor(n), kThreads, 0, stream>>>(pa, pb, po, map);
      }
      status = LaunchStatus("binary");
    }
  });
  return status;
}

absl::Status UnaryDispatch(UnaryOp op, GpuDtype dtype, const void* x, void* y,
                           int64_t n, UnaryParams p, cudaStream_t stream,
                           bool* found) {
  switch (op) {
#define SLUICE_UNARY_CASE(OP)                                               \
  case UnaryOp::OP:                                                         \
    return UnaryFor<UnaryOp::OP>(dtype, x, y, n, p, stream, found);
    SLUICE_UNARY_CASE(kNeg)
    SLUICE_UNARY_CASE(kAbs)
    SLUICE_UNARY_CASE(kRelu)
    SLUICE_UNARY_CASE(kExp)
    SLUICE_UNARY_CASE(kLog)
    SLUICE_UNARY_CASE(kSqrt)
    SLUICE_UNARY_CASE(kRsqrt)
    SLUICE_UNARY_CASE(kTanh)
    SLUICE_UNARY_CASE(kSigmoid)
    SLUICE_UNARY_CASE(kErf)
    SLUICE_UNARY_CASE(kGeluErf)
    SLUICE_UNARY_CASE(kGeluTanh)
    SLUICE_UNARY_CASE(kSin)
    SLUICE_UNARY_CASE(kCos)
    SLUICE_UNARY_CASE(kTan)
    SLUICE_UNARY_CASE(kAsin)
    SLUICE_UNARY_CASE(kAcos)
    SLUICE_UNARY_CASE(kAtan)
    SLUICE_UNARY_CASE(kSinh)
    SLUICE_UNARY_CASE(kCosh)
    SLUICE_UNARY_CASE(kAsinh)
    SLUICE_UNARY_CASE(kAcosh)
    SLUICE_UNARY_CASE(kAtanh)
    SLUICE_UNARY_CASE(kFloor)
    SLUICE_UNARY_CASE(kCeil)
    SLUICE_UNARY_CASE(kRound)
    SLUICE_UNARY_CASE(kSign)
    SLUICE_UNARY_CASE(kSoftplus)
    SLUICE_UNARY_CASE(kSoftsign)
    SLUICE_UNARY_CASE(kMish)
    SLUICE_UNARY_CASE(kHardSwish)
    SLUICE_UNARY_CASE(kHardSigmoid)
    SLUICE_UNARY_CASE(kElu)
    SLUICE_UNARY_CASE(kSelu)
    SLUICE_UNARY_CASE(kCelu)
    SLUICE_UNARY_CASE(kThresholdedRelu)
#undef SLUICE_UNARY_CASE
  }
  return absl::OkStatus();
}

absl::Status BinaryDispatch(BinaryOp op, GpuDtype dtype, const void* a,
                            const void* b, void* out, const IndexMap& map,
                            bool contiguous, cudaStream_t stream, bool* found) {
  switch (op) {
#define SLUICE_BINARY_CASE(OP)                                              \
  case BinaryOp::OP:                                                        \
    return BinaryFor<BinaryOp::OP>(dtype, a, b, out, map, contiguous, stream, \
                                   found);
    SLUICE_BINARY_CASE(kAdd)
    SLUICE_BINARY_CASE(kSub)
    SLUICE_BINARY_CASE(kMul)
    SLUICE_BINARY_CASE(kDiv)
    SLUICE_BINARY_CASE(kPow)
    SLUICE_BINARY_CASE(kMod)
    SLUICE_BINARY_CASE(kFMod)
    SLUICE_BINARY_CASE(kMaximum)
    SLUICE_BINARY_CASE(kMinimum)
    SLUICE_BINARY_CASE(kEqual)
    SLUICE_BINARY_CASE(kLess)
    SLUICE_BINARY_CASE(kGreater)
#undef SLUICE_BINARY_CASE
  }
  return absl::OkStatus();
}

// Lowest position of a zero divisor (kPow false) or a negative exponent
// (kPow true) in b.
template <typename T, bool kPow>
static __global__ void OperandCheckKernel(const T* b, int64_t n,
                                          unsigned long long* bad) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    bool reject = false;
    if constexpr (!kPow) {
      reject = b[i] == T(0);
    } else if constexpr (std::is_signed_v<T>) {
      reject = b[i] < T(0);
    }
    if (reject) atomicMin(bad, static_cast<unsigned long long>(i));
  }
}

template <int kBytes>
static __global__ void WhereKernel(const bool* cond, const void* x,
                                   const void* y, void* out, IndexMap map) {
  using U = typename Bits<kBytes>::type;
  const U* px = static_cast<const U*>(x);
  const U* py = static_cast<const U*>(y);
  U* po = static_cast<U*>(out);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
       i < map.num_elements; i += int64_t{gridDim.x} * blockDim.x) {
    po[i] = cond[MapOffset(map, 0, i)] ? px[MapOffset(map, 1, i)]
                                       : py[MapOffset(map, 2, i)];
  }
}

}  // namespace

bool HasUnaryKernel(UnaryOp op, GpuDtype dtype) {
  bool found = false;
  UnaryDispatch(op, dtype, nullptr, nullptr, 0, {}, nullptr, &found)
      .IgnoreError();
  return found;
}

bool HasBinaryKernel(BinaryOp op, GpuDtype dtype) {
  bool found = false;
  IndexMap empty;
  BinaryDispatch(op, dtype, nullptr, nullptr, nullptr, empty, true, nullptr,
                 &found)
      .IgnoreError();
  return found;
}

absl::Status LaunchUnary(UnaryOp op, GpuDtype dtype, const void* x, void* y,
                         int64_t n, cudaStream_t stream, UnaryParams params) {
  bool found = false;
  absl::Status s = UnaryDispatch(op, dtype, x, y, n, params, stream, &found);
  if (!found) {
    return absl::UnimplementedError(absl::StrCat(
        "no CUDA unary kernel for op ", static_cast<int>(op), " and dtype ",
        static_cast<int>(dtype)));
  }
  return s;
}

absl::Status LaunchBinary(BinaryOp op, GpuDtype dtype, const void* a,
                          const void* b, void* out, const IndexMap& map,
                          bool contiguous, cudaStream_t stream) {
  bool found = false;
  absl::Status s =
      BinaryDispatch(op, dtype, a, b, out, map, contiguous, stream, &found);
  if (!found) {
    return absl::UnimplementedError(absl::StrCat(
        "no CUDA binary kernel for op ", static_cast<int>(op), " and dtype ",
        static_cast<int>(dtype)));
  }
  return s;
}

bool NeedsOperandCheck(BinaryOp op, GpuDtype dtype) {
  bool is_int = false;
  bool is_signed = false;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    is_int = std::is_integral_v<T> && !std::is_same_v<T, bool>;
    is_signed = std::is_signed_v<T>;
  });
  if (op == BinaryOp::kPow) return is_int && is_signed;
  return is_int && (op == BinaryOp::kDiv || op == BinaryOp::kMod ||
                    op == BinaryOp::kFMod);
}

absl::Status LaunchOperandCheck(BinaryOp op, GpuDtype dtype, const void* b,
                                int64_t n, unsigned long long* bad_position,
                                cudaStream_t stream) {
  if (!NeedsOperandCheck(op, dtype)) {
    return absl::InvalidArgumentError("no operand check for this op and dtype");
  }
  const cudaError_t err =
      cudaMemsetAsync(bad_position, 0xff, sizeof(*bad_position), stream);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return absl::InternalError(absl::StrCat("operand check: ",
                                            cudaGetErrorString(err)));
  }
  if (n == 0) return absl::OkStatus();
  const bool pow = op == BinaryOp::kPow;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T* pb = static_cast<const T*>(b);
      if (pow) {
        OperandCheckKernel<T, true><<<GridFor(n), kThreads, 0, stream>>>(
            pb, n, bad_position);
      } else {
        OperandCheckKernel<T, false><<<GridFor(n), kThreads, 0, stream>>>(
            pb, n, bad_position);
      }
    }
  });
  return LaunchStatus("operand check");
}

absl::Status LaunchWhere(int element_bytes, const bool* cond, const void* x,
                         const void* y, void* out, const IndexMap& map,
                         cudaStream_t stream) {
  const int64_t n = map.num_elements;
  if (n == 0) return absl::OkStatus();
  switch (element_bytes) {
    case 1: WhereKernel<1><<<GridFor(n), kThreads, 0, stream>>>(cond, x, y, out, map); break;
    case 2: WhereKernel<2><<<GridFor(n), kThreads, 0, stream>>>(cond, x, y, out, map); break;
    case 4: WhereKernel<4><<<GridFor(n), kThreads, 0, stream>>>(cond, x, y, out, map); break;
    case 8: WhereKernel<8><<<GridFor(n), kThreads, 0, stream>>>(cond, x, y, out, map); break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("Where: unsupported element size ", element_bytes));
  }
  return LaunchStatus("Where");
}

}  // namespace sluice::cuda
