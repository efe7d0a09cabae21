// Trilu (elementwise, by element size), CumSum and CumProd (one thread per
// line).
#include <type_traits>

#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/trilu_cumsum.h"

namespace sluice::cuda {
namespace {

template <int kBytes>
static __global__ void TriluKernel(const void* x, void* y, int64_t total,
                                   int64_t rows, int64_t cols, int64_t k,
                                   bool upper) {
  using U = typename Bits<kBytes>::type;
  const U* in = static_cast<const U*>(x);
  U* out = static_cast<U*>(y);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = i % cols;
    const int64_t r = (i / cols) % rows;
    const bool keep = upper ? c - r >= k : c - r <= k;
    out[i] = keep ? in[i] : U(0);
  }
}

// a * b, wrapping for integers (computed in uint64), as the CPU's products.
template <typename W>
__device__ __forceinline__ W WrapMul(W a, W b) {
  if constexpr (std::is_integral_v<W>) {
    return static_cast<W>(static_cast<unsigned long long>(a) *
                          static_cast<unsigned long long>(b));
  } else {
    return a * b;
  }
}

// Running sums (kProd false) or products along n, one thread per line.
template <typename T, bool kProd>
static __global__ void CumulativeKernel(const T* x, T* y, int64_t outer,
                                        int64_t n, int64_t inner,
                                        bool exclusive, bool reverse) {
  using W = typename Wide<T>::type;
  const int64_t lines = outer * inner;
  for (int64_t l = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; l < lines;
       l += int64_t{gridDim.x} * blockDim.x) {
    const int64_t base = (l / inner) * n * inner + l % inner;
    W acc = kProd ? W(1) : W(0);
    for (int64_t s = 0; s < n; ++s) {
      const int64_t at = base + (reverse ? n - 1 - s : s) * inner;
      const W v = ToWide(x[at]);
      if (exclusive) {
        y[at] = FromWide<T>(acc);
        acc = kProd ? WrapMul(acc, v) : WrapAdd(acc, v);
      } else {
        acc = kProd ? WrapMul(acc, v) : WrapAdd(acc, v);
        y[at] = FromWide<T>(acc);
      }
    }
  }
}

template <bool kProd>
absl::Status LaunchCumulative(GpuDtype dtype, const void* x, void* y,
                              int64_t outer, int64_t n, int64_t inner,
                              bool exclusive, bool reverse,
                              cudaStream_t stream) {
  const char* what = kProd ? "CumProd" : "CumSum";
  const int64_t lines = outer * inner;
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsArith<T>) {
      found = true;
      if (lines == 0 || n == 0) return;
      CumulativeKernel<T, kProd><<<GridFor(lines), kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), outer, n, inner,
          exclusive, reverse);
    }
  });
  if (!found) {
    return absl::UnimplementedError(absl::StrCat(
        "no CUDA ", what, " for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus(what);
}

}  // namespace

absl::Status LaunchTrilu(int element_bytes, const void* x, void* y,
                         int64_t total, int64_t rows, int64_t cols, int64_t k,
                         bool upper, cudaStream_t stream) {
  if (total == 0) return absl::OkStatus();
  const unsigned int grid = GridFor(total);
  switch (element_bytes) {
    case 1: TriluKernel<1><<<grid, kThreads, 0, stream>>>(x, y, total, rows, cols, k, upper); break;
    case 2: TriluKernel<2><<<grid, kThreads, 0, stream>>>(x, y, total, rows, cols, k, upper); break;
    case 4: TriluKernel<4><<<grid, kThreads, 0, stream>>>(x, y, total, rows, cols, k, upper); break;
    case 8: TriluKernel<8><<<grid, kThreads, 0, stream>>>(x, y, total, rows, cols, k, upper); break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("Trilu: unsupported element size ", element_bytes));
  }
  return LaunchStatus("Trilu");
}

bool HasCumSumKernel(GpuDtype dtype) {
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) { found = kIsArith<decltype(tag)>; });
  return found;
}

absl::Status LaunchCumSum(GpuDtype dtype, const void* x, void* y,
                          int64_t outer, int64_t n, int64_t inner,
                          bool exclusive, bool reverse, cudaStream_t stream) {
  return LaunchCumulative<false>(dtype, x, y, outer, n, inner, exclusive,
                                 reverse, stream);
}

absl::Status LaunchCumProd(GpuDtype dtype, const void* x, void* y,
                           int64_t outer, int64_t n, int64_t inner,
                           bool exclusive, bool reverse, cudaStream_t stream) {
  return LaunchCumulative<true>(dtype, x, y, outer, n, inner, exclusive,
                                reverse, stream);
}

}  // namespace sluice::cuda
