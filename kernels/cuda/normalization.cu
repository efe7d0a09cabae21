// Softmax and LayerNorm: one block per row, block reductions in shared
// memory (device_utils.cuh).
#include <cmath>

#include "kernels/cuda/device_utils.cuh"
#include "kernels/cuda/normalization.h"

namespace sluice::cuda {
namespace {

// Rows are [axis_len] elements `inner` apart; row r starts at
// (r / inner) * axis_len * inner + r % inner.
template <typename T>
static __global__ void SoftmaxKernel(const T* x, T* y, int64_t rows,
                                     int64_t axis_len, int64_t inner) {
  using W = typename Wide<T>::type;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = (row / inner) * axis_len * inner + row % inner;
    W m = -INFINITY;
    for (int64_t j = threadIdx.x; j < axis_len; j += blockDim.x) {
      m = MaxOp()(m, ToWide(x[base + j * inner]));
    }
    m = BlockReduce<W>(m, MaxOp());
    W sum = 0;
    for (int64_t j = threadIdx.x; j < axis_len; j += blockDim.x) {
      sum += exp(ToWide(x[base + j * inner]) - m);
    }
    sum = BlockReduce<W>(sum, SumOp());
    const W inv = W(1) / sum;
    for (int64_t j = threadIdx.x; j < axis_len; j += blockDim.x) {
      y[base + j * inner] = FromWide<T>(exp(ToWide(x[base + j * inner]) - m) * inv);
    }
  }
}

template <typename T>
static __global__ void LayerNormKernel(const T* x, const T* scale,
                                       const T* bias, T* y, int64_t rows,
                                       int64_t cols, float epsilon) {
  using W = typename Wide<T>::type;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    W sum = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += ToWide(xr[j]);
    const W mean = BlockReduce<W>(sum, SumOp()) / W(cols);
    W sq = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const W d = ToWide(xr[j]) - mean;
      sq += d * d;
    }
    const W var = BlockReduce<W>(sq, SumOp()) / W(cols);
    const W inv = W(1) / sqrt(var + W(epsilon));
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      yr[j] = FromWide<T>((ToWide(xr[j]) - mean) * inv * ToWide(scale[j]) +
                          ToWide(bias[j]));
    }
  }
}

// Threads per block: enough for the row, a multiple of 32, at most 1024.
int BlockFor(int64_t len) {
  int64_t t = 32;
  while (t < len && t < 1024) t *= 2;
  return static_cast<int>(t);
}

unsigned int RowBlocks(int64_t rows) {
  return static_cast<unsigned int>(rows < (1 << 20) ? rows : (1 << 20));
}

template <typename F>
absl::Status FloatDispatch(GpuDtype dtype, const char* what, F&& fn) {
  switch (dtype) {
    case GpuDtype::kFloat: fn(float{}); break;
    case GpuDtype::kHalf: fn(__half{}); break;
    case GpuDtype::kBFloat16: fn(__nv_bfloat16{}); break;
    case GpuDtype::kDouble: fn(double{}); break;
    default:
      return absl::UnimplementedError(
          absl::StrCat("no CUDA ", what, " kernel for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus(what);
}

}  // namespace

absl::Status LaunchSoftmax(GpuDtype dtype, const void* x, void* y,
                           int64_t outer, int64_t axis_len, int64_t inner,
                           cudaStream_t stream) {
  const int64_t rows = outer * inner;
  if (rows == 0 || axis_len == 0) return absl::OkStatus();
  return FloatDispatch(dtype, "Softmax", [&](auto tag) {
    using T = decltype(tag);
    SoftmaxKernel<T><<<RowBlocks(rows), BlockFor(axis_len), 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), rows, axis_len, inner);
  });
}

absl::Status LaunchLayerNorm(GpuDtype dtype, const void* x, const void* scale,
                             const void* bias, void* y, int64_t rows,
                             int64_t cols, float epsilon, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return absl::OkStatus();
  return FloatDispatch(dtype, "LayerNorm", [&](auto tag) {
    using T = decltype(tag);
    LayerNormKernel<T><<<RowBlocks(rows), BlockFor(cols), 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(scale),
        static_cast<const T*>(bias), static_cast<T*>(y), rows, cols, epsilon);
  });
}

}  // namespace sluice::cuda
