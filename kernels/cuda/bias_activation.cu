// The convolution epilogue: one grid-stride loop over the output.
#include "kernels/cuda/bias_activation.h"
#include "kernels/cuda/device_utils.cuh"

namespace sluice::cuda {
namespace {

template <typename T>
static __global__ void BiasActivationKernel(T* y, const T* bias, const T* side,
                                            int64_t total, int64_t channels,
                                            int64_t spatial, bool relu) {
  using W = typename Wide<T>::type;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{blockDim.x} * gridDim.x) {
    W v = ToWide(y[i]) + ToWide(bias[(i / spatial) % channels]);
    if (side != nullptr) v += ToWide(side[i]);
    if (relu && v < W(0)) v = W(0);
    y[i] = FromWide<T>(v);
  }
}

}  // namespace

absl::Status LaunchBiasActivation(GpuDtype dtype, void* y, const void* bias,
                                  const void* side, int64_t planes,
                                  int64_t channels, int64_t spatial, bool relu,
                                  cudaStream_t stream) {
  const int64_t total = planes * spatial;
  if (total == 0) return absl::OkStatus();
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    BiasActivationKernel<T><<<GridFor(total), kThreads, 0, stream>>>(
        static_cast<T*>(y), static_cast<const T*>(bias),
        static_cast<const T*>(side), total, channels, spatial, relu);
  };
  switch (dtype) {
    case GpuDtype::kFloat: launch(float{}); break;
    case GpuDtype::kHalf: launch(__half{}); break;
    case GpuDtype::kBFloat16: launch(__nv_bfloat16{}); break;
    case GpuDtype::kDouble: launch(double{}); break;
    default:
      return absl::UnimplementedError(absl::StrCat(
          "no CUDA bias-activation kernel for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus("BiasActivation");
}

}  // namespace sluice::cuda
