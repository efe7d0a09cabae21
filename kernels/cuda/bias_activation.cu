// The convolution's and the matrix product's epilogues: one grid-stride
// loop over the output each.
#include "kernels/cuda/bias_activation.h"

#include <type_traits>

#include "kernels/cuda/device_utils.cuh"

namespace sluice::cuda {
namespace {

template <typename T>
static __global__ void BiasActivationKernel(T* y, const T* bias, const T* side,
                                            int64_t total, int64_t channels,
                                            int64_t spatial, bool relu,
                                            float relu_max) {
  using W = typename Wide<T>::type;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{blockDim.x} * gridDim.x) {
    W v = ToWide(y[i]) + ToWide(bias[(i / spatial) % channels]);
    if (side != nullptr) v += ToWide(side[i]);
    if (relu && v < W(0)) v = W(0);
    if (relu && v > W(relu_max)) v = W(relu_max);
    y[i] = FromWide<T>(v);
  }
}

template <typename W>
__device__ W GeluTanh(W v) {
  const W k = W(0.7978845608028654);  // sqrt(2 / pi)
  const W inner = k * (v + W(0.044715) * v * v * v);
  if constexpr (std::is_same_v<W, double>) {
    return W(0.5) * v * (W(1) + tanh(inner));
  } else {
    return W(0.5) * v * (W(1) + tanhf(inner));
  }
}

template <typename T>
static __global__ void RowBiasActivationKernel(T* y, const T* bias,
                                               const T* side, int64_t total,
                                               int64_t cols,
                                               RowActivation activation) {
  using W = typename Wide<T>::type;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{blockDim.x} * gridDim.x) {
    W v = ToWide(y[i]) + ToWide(bias[i % cols]);
    if (side != nullptr) v += ToWide(side[i]);
    if ((activation == RowActivation::kRelu ||
         activation == RowActivation::kRelu6) &&
        v < W(0)) {
      v = W(0);
    }
    if (activation == RowActivation::kRelu6 && v > W(6)) v = W(6);
    if (activation == RowActivation::kGeluTanh) v = GeluTanh(v);
    y[i] = FromWide<T>(v);
  }
}

}  // namespace

absl::Status LaunchRowBiasActivation(GpuDtype dtype, void* y, const void* bias,
                                     const void* side, int64_t rows,
                                     int64_t cols, RowActivation activation,
                                     cudaStream_t stream) {
  const int64_t total = rows * cols;
  if (total == 0) return absl::OkStatus();
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    RowBiasActivationKernel<T><<<GridFor(total), kThreads, 0, stream>>>(
        static_cast<T*>(y), static_cast<const T*>(bias),
        static_cast<const T*>(side), total, cols, activation);
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
  return LaunchStatus("RowBiasActivation");
}

absl::Status LaunchBiasActivation(GpuDtype dtype, void* y, const void* bias,
                                  const void* side, int64_t planes,
                                  int64_t channels, int64_t spatial, bool relu,
                                  cudaStream_t stream, float relu_max) {
  const int64_t total = planes * spatial;
  if (total == 0) return absl::OkStatus();
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    BiasActivationKernel<T><<<GridFor(total), kThreads, 0, stream>>>(
        static_cast<T*>(y), static_cast<const T*>(bias),
        static_cast<const T*>(side), total, channels, spatial, relu,
        relu_max);
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
