// Elementwise CUDA kernels: one thread per element in a grid-stride loop;
// 16-bit floats are computed in float.
#include <cmath>
#include <type_traits>

#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/elementwise.h"

namespace sluice::cuda {
namespace {

template <UnaryOp kOp, typename W>
__device__ __forceinline__ W ApplyUnary(W x) {
  if constexpr (kOp == UnaryOp::kNeg) return -x;
  if constexpr (kOp == UnaryOp::kAbs) return x < W(0) ? -x : x;
  if constexpr (kOp == UnaryOp::kRelu) return x > W(0) ? x : W(0);
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
  }
  return x;
}

template <UnaryOp kOp, typename T>
static __global__ void UnaryKernel(const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = FromWide<T>(ApplyUnary<kOp>(ToWide(x[i])));
  }
}

template <BinaryOp kOp, typename W>
__device__ __forceinline__ auto ApplyBinary(W a, W b) {
  if constexpr (kOp == BinaryOp::kAdd) return a + b;
  if constexpr (kOp == BinaryOp::kSub) return a - b;
  if constexpr (kOp == BinaryOp::kMul) return a * b;
  if constexpr (kOp == BinaryOp::kDiv) return a / b;
  if constexpr (kOp == BinaryOp::kPow) return pow(a, b);
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

template <typename T>
constexpr bool kIsFloat = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                          std::is_same_v<T, __half> ||
                          std::is_same_v<T, __nv_bfloat16>;

// Calls fn(T{}) for the C++ type of `dtype`; false if there is none.
template <typename F>
bool DispatchDtype(GpuDtype dtype, F&& fn) {
  switch (dtype) {
    case GpuDtype::kFloat: fn(float{}); return true;
    case GpuDtype::kHalf: fn(__half{}); return true;
    case GpuDtype::kBFloat16: fn(__nv_bfloat16{}); return true;
    case GpuDtype::kDouble: fn(double{}); return true;
    case GpuDtype::kInt32: fn(int32_t{}); return true;
    case GpuDtype::kInt64: fn(int64_t{}); return true;
    case GpuDtype::kInt8: fn(int8_t{}); return true;
    case GpuDtype::kUInt8: fn(uint8_t{}); return true;
    case GpuDtype::kBool: fn(bool{}); return true;
  }
  return false;
}

template <UnaryOp kOp, typename T>
constexpr bool UnarySupported() {
  if constexpr (kIsFloat<T>) return true;
  if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
    return kOp == UnaryOp::kNeg || kOp == UnaryOp::kAbs || kOp == UnaryOp::kRelu;
  }
  return false;
}

template <BinaryOp kOp, typename T>
constexpr bool BinarySupported() {
  if constexpr (kIsFloat<T>) return true;
  if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
    return kOp != BinaryOp::kDiv && kOp != BinaryOp::kPow;
  }
  if constexpr (std::is_same_v<T, bool>) return kOp == BinaryOp::kEqual;
  return false;
}

template <UnaryOp kOp>
absl::Status UnaryFor(GpuDtype dtype, const void* x, void* y, int64_t n,
                      cudaStream_t stream, bool* found) {
  absl::Status status;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (UnarySupported<kOp, T>()) {
      *found = true;
      if (n == 0) return;
      UnaryKernel<kOp, T><<<GridFor(n), kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), n);
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
                           int64_t n, cudaStream_t stream, bool* found) {
  switch (op) {
#define SLUICE_UNARY_CASE(OP) \
  case UnaryOp::OP: return UnaryFor<UnaryOp::OP>(dtype, x, y, n, stream, found);
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
    SLUICE_BINARY_CASE(kMaximum)
    SLUICE_BINARY_CASE(kMinimum)
    SLUICE_BINARY_CASE(kEqual)
    SLUICE_BINARY_CASE(kLess)
    SLUICE_BINARY_CASE(kGreater)
#undef SLUICE_BINARY_CASE
  }
  return absl::OkStatus();
}

template <typename S, typename D>
static __global__ void CastKernel(const S* x, D* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    if constexpr (std::is_same_v<D, bool>) {
      y[i] = ToWide(x[i]) != 0;
    } else if constexpr (std::is_same_v<S, bool>) {
      y[i] = FromWide<D>(static_cast<typename Wide<D>::type>(x[i] ? 1 : 0));
    } else {
      y[i] = FromWide<D>(ToWide(x[i]));
    }
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
  UnaryDispatch(op, dtype, nullptr, nullptr, 0, nullptr, &found).IgnoreError();
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
                         int64_t n, cudaStream_t stream) {
  bool found = false;
  absl::Status s = UnaryDispatch(op, dtype, x, y, n, stream, &found);
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

absl::Status LaunchCast(GpuDtype src, GpuDtype dst, const void* x, void* y,
                        int64_t n, cudaStream_t stream) {
  absl::Status status;
  bool found = false;
  DispatchDtype(src, [&](auto s_tag) {
    using S = decltype(s_tag);
    DispatchDtype(dst, [&](auto d_tag) {
      using D = decltype(d_tag);
      found = true;
      if (n == 0) return;
      CastKernel<S, D><<<GridFor(n), kThreads, 0, stream>>>(
          static_cast<const S*>(x), static_cast<D*>(y), n);
      status = LaunchStatus("Cast");
    });
  });
  if (!found) return absl::UnimplementedError("no CUDA Cast for these dtypes");
  return status;
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
