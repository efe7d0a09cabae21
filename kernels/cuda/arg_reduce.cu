// ArgMax and ArgMin: one thread per output element walks its line.
#include <type_traits>

#include "kernels/cuda/arg_reduce.h"
#include "kernels/cuda/device_utils.cuh"

namespace sluice::cuda {
namespace {

template <typename T, bool kMax, bool kLast>
static __global__ void ArgReduceKernel(const T* x, int64_t* out,
                                       int64_t outer, int64_t n,
                                       int64_t inner) {
  const int64_t total = outer * inner;
  for (int64_t r = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; r < total;
       r += int64_t{gridDim.x} * blockDim.x) {
    const T* p = x + (r / inner) * n * inner + r % inner;
    auto best = ToWide(p[0]);
    int64_t best_i = 0;
    for (int64_t i = 1; i < n; ++i) {
      const auto v = ToWide(p[i * inner]);
      bool better;
      if constexpr (kMax) {
        better = kLast ? v >= best : v > best;
      } else {
        better = kLast ? v <= best : v < best;
      }
      if (better) {
        best = v;
        best_i = i;
      }
    }
    out[r] = best_i;
  }
}

template <typename T, bool kMax>
void Launch(bool last, const T* x, int64_t* out, int64_t outer, int64_t n,
            int64_t inner, cudaStream_t stream) {
  const unsigned int grid = GridFor(outer * inner);
  if (last) {
    ArgReduceKernel<T, kMax, true><<<grid, kThreads, 0, stream>>>(
        x, out, outer, n, inner);
  } else {
    ArgReduceKernel<T, kMax, false><<<grid, kThreads, 0, stream>>>(
        x, out, outer, n, inner);
  }
}

}  // namespace

bool HasArgReduceKernel(GpuDtype dtype) {
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) { found = kIsArith<decltype(tag)>; });
  return found;
}

absl::Status LaunchArgReduce(bool max, bool select_last, GpuDtype dtype,
                             const void* x, int64_t* out, int64_t outer,
                             int64_t n, int64_t inner, cudaStream_t stream) {
  if (n < 1) {
    return absl::InvalidArgumentError("ArgMax/ArgMin over an empty dimension");
  }
  if (outer * inner == 0) return absl::OkStatus();
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsArith<T>) {
      found = true;
      const T* px = static_cast<const T*>(x);
      if (max) {
        Launch<T, true>(select_last, px, out, outer, n, inner, stream);
      } else {
        Launch<T, false>(select_last, px, out, outer, n, inner, stream);
      }
    }
  });
  if (!found) {
    return absl::UnimplementedError(absl::StrCat(
        "no CUDA ArgMax/ArgMin for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus("ArgMax/ArgMin");
}

}  // namespace sluice::cuda
