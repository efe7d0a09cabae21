// Einsum: one thread per output element, an odometer over the summed labels.
#include <type_traits>

#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/einsum.h"

namespace sluice::cuda {
namespace {

template <typename T>
static __global__ void EinsumKernel(EinsumParams p, T* y, int64_t total) {
  using A = std::conditional_t<kIsFloat<T>, double, unsigned long long>;
  int64_t sum_count = 1;
  for (int s = 0; s < p.n_sum; ++s) sum_count *= p.sum_sizes[s];
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < total;
       o += int64_t{gridDim.x} * blockDim.x) {
    int64_t off[kMaxEinsumInputs] = {};
    int64_t rest = o;
    for (int d = p.n_out - 1; d >= 0; --d) {
      const int64_t i = rest % p.out_sizes[d];
      rest /= p.out_sizes[d];
      for (int k = 0; k < p.n_in; ++k) off[k] += i * p.out_strides[k][d];
    }
    int64_t idx[kMaxEinsumLabels] = {};
    A acc = A(0);
    for (int64_t s = 0; s < sum_count; ++s) {
      A prod = A(1);
      for (int k = 0; k < p.n_in; ++k) {
        const T v = static_cast<const T*>(p.data[k])[off[k]];
        if constexpr (kIsFloat<T>) {
          prod = prod * static_cast<double>(ToWide(v));
        } else {
          prod = prod * static_cast<A>(static_cast<int64_t>(v));
        }
      }
      acc = acc + prod;
      for (int d = p.n_sum - 1; d >= 0; --d) {  // next summed index
        for (int k = 0; k < p.n_in; ++k) off[k] += p.sum_strides[k][d];
        if (++idx[d] < p.sum_sizes[d]) break;
        for (int k = 0; k < p.n_in; ++k) off[k] -= idx[d] * p.sum_strides[k][d];
        idx[d] = 0;
      }
    }
    if constexpr (kIsFloat<T>) {
      y[o] = FromWide<T>(static_cast<typename Wide<T>::type>(acc));
    } else {
      y[o] = static_cast<T>(acc);
    }
  }
}

}  // namespace

bool HasEinsumKernel(GpuDtype dtype) {
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) { found = kIsOrdered<decltype(tag)>; });
  return found;
}

absl::Status LaunchEinsum(GpuDtype dtype, const EinsumParams& p, void* y,
                          int64_t y_elements, cudaStream_t stream) {
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsOrdered<T>) {
      found = true;
      if (y_elements == 0) return;
      EinsumKernel<T><<<GridFor(y_elements), kThreads, 0, stream>>>(
          p, static_cast<T*>(y), y_elements);
    }
  });
  if (!found) {
    return absl::UnimplementedError(
        absl::StrCat("no CUDA Einsum for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus("Einsum");
}

}  // namespace sluice::cuda
