// The windows: one thread per element, in double.
#include <cmath>

#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/signal.h"

namespace sluice::cuda {
namespace {

template <typename T>
static __global__ void WindowKernel(T* y, int64_t size, double denom,
                                    WindowKind kind) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < size;
       i += int64_t{gridDim.x} * blockDim.x) {
    const double a = M_PI * static_cast<double>(i) / denom;
    double v;
    if (kind == WindowKind::kHann) {
      v = sin(a) * sin(a);
    } else if (kind == WindowKind::kHamming) {
      v = 25.0 / 46.0 - (21.0 / 46.0) * cos(2 * a);
    } else {
      v = 0.42 - 0.5 * cos(2 * a) + 0.08 * cos(4 * a);
    }
    y[i] = FromWide<T>(static_cast<typename Wide<T>::type>(v));
  }
}

}  // namespace

bool HasWindowKernel(GpuDtype dtype) {
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) { found = kIsFloat<decltype(tag)>; });
  return found;
}

absl::Status LaunchWindow(GpuDtype dtype, WindowKind kind, void* y,
                          int64_t size, bool periodic, cudaStream_t stream) {
  const double denom = static_cast<double>(periodic ? size : size - 1);
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      found = true;
      if (size == 0) return;
      WindowKernel<T><<<GridFor(size), kThreads, 0, stream>>>(
          static_cast<T*>(y), size, denom, kind);
    }
  });
  if (!found) {
    return absl::UnimplementedError(
        absl::StrCat("no CUDA Window for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus("Window");
}

}  // namespace sluice::cuda
