// Reductions: one block per output element (device_utils.cuh BlockReduce).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/reduce.h"

namespace sluice::cuda {
namespace {

struct MinOp {
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    // NaN propagates, as on the CPU.
    if (a != a) return a;
    if (b != b) return b;
    return a < b ? a : b;
  }
};
struct ProdOp {
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    if constexpr (std::is_integral_v<A>) {  // wraps, as the CPU's products
      return static_cast<A>(static_cast<unsigned long long>(a) *
                            static_cast<unsigned long long>(b));
    } else {
      return a * b;
    }
  }
};

// The dtypes each reduction implements: every one takes the floats, int32
// and int64; Max and Min also int8, uint8 and bool (any, all), Prod int8
// and uint8 (its wrapped int64 product truncates to the wrapped narrow one).
template <ReduceOp kOp, typename T>
constexpr bool kHasReduce =
    kIsArith<T> ||
    ((kOp == ReduceOp::kMax || kOp == ReduceOp::kMin || kOp == ReduceOp::kProd) &&
     (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>)) ||
    ((kOp == ReduceOp::kMax || kOp == ReduceOp::kMin) && std::is_same_v<T, bool>);

// The smallest (kLowest) or largest value of T, in T's wide type: the
// identities of Max and Min, as the CPU's (-inf / +inf for floats).
template <typename T, bool kLowest>
__device__ __forceinline__ typename Wide<T>::type Extreme() {
  using W = typename Wide<T>::type;
  if constexpr (std::is_floating_point_v<W>) {
    return kLowest ? W(-INFINITY) : W(INFINITY);
  } else if constexpr (std::is_same_v<T, bool>) {
    return kLowest ? W(0) : W(1);
  } else if constexpr (std::is_same_v<T, int8_t>) {
    return kLowest ? W(INT8_MIN) : W(INT8_MAX);
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    return kLowest ? W(0) : W(UINT8_MAX);
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return kLowest ? W(INT32_MIN) : W(INT32_MAX);
  } else {
    return kLowest ? W(INT64_MIN) : W(INT64_MAX);
  }
}

template <ReduceOp kOp, typename T>
__device__ __forceinline__ typename Wide<T>::type Identity() {
  using W = typename Wide<T>::type;
  if constexpr (kOp == ReduceOp::kMax) return Extreme<T, true>();
  if constexpr (kOp == ReduceOp::kMin) return Extreme<T, false>();
  if constexpr (kOp == ReduceOp::kProd) return W(1);
  return W(0);
}

template <ReduceOp kOp, typename W>
__device__ __forceinline__ W Fold(W a, W b) {
  if constexpr (kOp == ReduceOp::kMax) return MaxOp()(a, b);
  if constexpr (kOp == ReduceOp::kMin) return MinOp()(a, b);
  if constexpr (kOp == ReduceOp::kProd) return ProdOp()(a, b);
  return a + b;
}

template <ReduceOp kOp, typename W>
__device__ __forceinline__ W BlockFold(W v) {
  if constexpr (kOp == ReduceOp::kMax) return BlockReduce<W>(v, MaxOp());
  if constexpr (kOp == ReduceOp::kMin) return BlockReduce<W>(v, MinOp());
  if constexpr (kOp == ReduceOp::kProd) return BlockReduce<W>(v, ProdOp());
  return BlockReduce<W>(v, SumOp());
}

template <ReduceOp kOp, typename T>
static __global__ void ReduceKernel(const T* in, T* out, ReduceMap map) {
  using W = typename Wide<T>::type;
  const int64_t count = map.reduced.num_elements;
  for (int64_t o = blockIdx.x; o < map.kept.num_elements; o += gridDim.x) {
    const T* base = in + MapOffset(map.kept, 0, o);
    W acc = Identity<kOp, T>();
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x) {
      acc = Fold<kOp, W>(acc, ToWide(base[MapOffset(map.reduced, 0, r)]));
    }
    acc = BlockFold<kOp, W>(acc);
    if (threadIdx.x == 0) {
      if constexpr (kOp == ReduceOp::kMean) {
        if constexpr (std::is_floating_point_v<W>) {
          acc = count == 0 ? W(NAN) : acc / W(count);
        } else {
          acc = count == 0 ? W(0) : acc / W(count);
        }
      }
      out[o] = FromWide<T>(acc);
    }
  }
}

template <ReduceOp kOp>
bool HasReduceFor(GpuDtype dtype) {
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) { found = kHasReduce<kOp, decltype(tag)>; });
  return found;
}

template <ReduceOp kOp>
absl::Status ReduceFor(GpuDtype dtype, const void* in, void* out,
                       const ReduceMap& map, cudaStream_t stream) {
  const int64_t n = map.kept.num_elements;
  const unsigned int blocks =
      static_cast<unsigned int>(n < (1 << 20) ? n : (1 << 20));
  int threads = 32;
  while (threads < map.reduced.num_elements && threads < 512) threads *= 2;
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kHasReduce<kOp, T>) {
      found = true;
      ReduceKernel<kOp, T><<<blocks, threads, 0, stream>>>(
          static_cast<const T*>(in), static_cast<T*>(out), map);
    }
  });
  if (!found) {
    return absl::UnimplementedError(absl::StrCat(
        "no CUDA reduction kernel for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus("reduction");
}

}  // namespace

absl::Status LaunchReduce(ReduceOp op, GpuDtype dtype, const void* in,
                          void* out, const ReduceMap& map, cudaStream_t stream) {
  if (map.kept.num_elements == 0) return absl::OkStatus();
  switch (op) {
    case ReduceOp::kSum: return ReduceFor<ReduceOp::kSum>(dtype, in, out, map, stream);
    case ReduceOp::kMean: return ReduceFor<ReduceOp::kMean>(dtype, in, out, map, stream);
    case ReduceOp::kMax: return ReduceFor<ReduceOp::kMax>(dtype, in, out, map, stream);
    case ReduceOp::kMin: return ReduceFor<ReduceOp::kMin>(dtype, in, out, map, stream);
    case ReduceOp::kProd: return ReduceFor<ReduceOp::kProd>(dtype, in, out, map, stream);
  }
  return absl::InvalidArgumentError("unknown reduction");
}

bool HasReduceKernel(ReduceOp op, GpuDtype dtype) {
  switch (op) {
    case ReduceOp::kSum: return HasReduceFor<ReduceOp::kSum>(dtype);
    case ReduceOp::kMean: return HasReduceFor<ReduceOp::kMean>(dtype);
    case ReduceOp::kMax: return HasReduceFor<ReduceOp::kMax>(dtype);
    case ReduceOp::kMin: return HasReduceFor<ReduceOp::kMin>(dtype);
    case ReduceOp::kProd: return HasReduceFor<ReduceOp::kProd>(dtype);
  }
  return false;
}

}  // namespace sluice::cuda
