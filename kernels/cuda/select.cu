// TopK (rank by comparison with the whole line), OneHot and EyeLike.
#include <cmath>
#include <type_traits>

#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/select.h"

namespace sluice::cuda {
namespace {

// a < b with NaN after every number, as the CPU's NanLast.
template <typename W>
__device__ __forceinline__ bool NanLast(W a, W b) {
  if (a != a) return false;
  if (b != b) return true;
  return a < b;
}

// One thread per element: its rank in its line is the number of elements
// that come before it ((value, index) order); ranks below k are written.
template <typename T>
static __global__ void TopKKernel(const T* x, T* values, int64_t* indices,
                                  int64_t outer, int64_t n, int64_t inner,
                                  int64_t k, bool largest) {
  const int64_t total = outer * n * inner;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t j = e % inner;
    const int64_t p = (e / inner) % n;
    const int64_t o = e / (inner * n);
    const T* line = x + o * n * inner + j;
    const auto a = ToWide(line[p * inner]);
    int64_t rank = 0;
    for (int64_t q = 0; q < n && rank < k; ++q) {
      if (q == p) continue;
      const auto c = ToWide(line[q * inner]);
      // q comes before p: strictly better, or equal with a lower index.
      const bool better = largest ? NanLast(a, c) : NanLast(c, a);
      const bool worse = largest ? NanLast(c, a) : NanLast(a, c);
      if (better || (!worse && q < p)) ++rank;
    }
    if (rank < k) {
      const int64_t dst = (o * k + rank) * inner + j;
      values[dst] = line[p * inner];
      indices[dst] = p;
    }
  }
}

// The index as int64, or `none` when it is not a finite int64 (floats).
template <typename I>
__device__ __forceinline__ int64_t IndexValue(I v, int64_t none) {
  if constexpr (std::is_integral_v<I>) {
    return static_cast<int64_t>(v);
  } else {
    const double d = static_cast<double>(ToWide(v));
    if (!(fabs(d) < 9.2e18)) return none;
    return static_cast<int64_t>(d);  // toward zero
  }
}

template <typename I, int kBytes>
static __global__ void OneHotKernel(const I* indices, uint64_t off_bits,
                                    uint64_t on_bits, void* out,
                                    int64_t outer, int64_t depth,
                                    int64_t inner) {
  using U = typename Bits<kBytes>::type;
  U* y = static_cast<U*>(out);
  const U off = static_cast<U>(off_bits), on = static_cast<U>(on_bits);
  const int64_t total = outer * depth * inner;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t j = e % inner;
    const int64_t slot = (e / inner) % depth;
    const int64_t o = e / (inner * depth);
    int64_t i = IndexValue(indices[o * inner + j], -1 - depth);
    if (i < 0) i += depth;
    y[e] = i == slot ? on : off;
  }
}

template <typename T>
static __global__ void EyeLikeKernel(T* out, int64_t rows, int64_t cols,
                                     int64_t k) {
  const int64_t total = rows * cols;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = e / cols, c = e % cols;
    out[e] = FromWide<T>(typename Wide<T>::type(c == r + k ? 1 : 0));
  }
}

}  // namespace

bool HasTopKKernel(GpuDtype dtype) {
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) { found = kIsOrdered<decltype(tag)>; });
  return found;
}

absl::Status LaunchTopK(GpuDtype dtype, const void* x, void* values,
                        int64_t* indices, int64_t outer, int64_t n,
                        int64_t inner, int64_t k, bool largest,
                        cudaStream_t stream) {
  const int64_t total = outer * n * inner;
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsOrdered<T>) {
      found = true;
      if (total == 0 || k == 0) return;
      TopKKernel<T><<<GridFor(total), kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(values), indices, outer, n,
          inner, k, largest);
    }
  });
  if (!found) {
    return absl::UnimplementedError(
        absl::StrCat("no CUDA TopK for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus("TopK");
}

bool HasOneHotIndices(GpuDtype dtype) { return HasTopKKernel(dtype); }

absl::Status LaunchOneHot(GpuDtype index_dtype, const void* indices,
                          int element_bytes, uint64_t off_bits,
                          uint64_t on_bits, void* out, int64_t outer,
                          int64_t depth, int64_t inner, cudaStream_t stream) {
  const int64_t total = outer * depth * inner;
  bool found = false;
  absl::Status status = absl::OkStatus();
  DispatchDtype(index_dtype, [&](auto tag) {
    using I = decltype(tag);
    if constexpr (kIsOrdered<I>) {
      found = true;
      if (total == 0) return;
      const I* idx = static_cast<const I*>(indices);
      const unsigned int grid = GridFor(total);
      switch (element_bytes) {
        case 1: OneHotKernel<I, 1><<<grid, kThreads, 0, stream>>>(idx, off_bits, on_bits, out, outer, depth, inner); break;
        case 2: OneHotKernel<I, 2><<<grid, kThreads, 0, stream>>>(idx, off_bits, on_bits, out, outer, depth, inner); break;
        case 4: OneHotKernel<I, 4><<<grid, kThreads, 0, stream>>>(idx, off_bits, on_bits, out, outer, depth, inner); break;
        case 8: OneHotKernel<I, 8><<<grid, kThreads, 0, stream>>>(idx, off_bits, on_bits, out, outer, depth, inner); break;
        default:
          status = absl::InvalidArgumentError(
              absl::StrCat("OneHot: unsupported element size ", element_bytes));
      }
    }
  });
  if (!found) {
    return absl::UnimplementedError(absl::StrCat(
        "no CUDA OneHot for index dtype ", static_cast<int>(index_dtype)));
  }
  if (!status.ok()) return status;
  return LaunchStatus("OneHot");
}

absl::Status LaunchEyeLike(GpuDtype dtype, void* out, int64_t rows,
                           int64_t cols, int64_t k, cudaStream_t stream) {
  const int64_t total = rows * cols;
  if (total == 0) return absl::OkStatus();
  const bool found = DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    EyeLikeKernel<T><<<GridFor(total), kThreads, 0, stream>>>(
        static_cast<T*>(out), rows, cols, k);
  });
  if (!found) {
    return absl::UnimplementedError(
        absl::StrCat("no CUDA EyeLike for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus("EyeLike");
}

}  // namespace sluice::cuda
