// Softmax, LayerNorm and RMSNorm. Softmax: one block per row, block
// reductions in shared memory (device_utils.cuh). LayerNorm and RMSNorm:
// rows up to 8192 elements are held in registers, a warp per row up to 1024
// elements (4 rows a block), else a block of 256 threads per row, so x is
// read once from memory and LayerNorm's mean and variance are exact
// two-pass sums; longer rows take the block-per-row loops that read x
// again for each pass.
#include <cmath>
#include <type_traits>

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

// The sum over the kThreads threads that share a row (a warp, or the whole
// block of kThreads), in every one of them.
template <int kGroup>
__device__ __forceinline__ float GroupSum(float v, float* partial) {
  for (int offset = 16; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  if constexpr (kGroup > 32) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    __syncthreads();  // `partial` may still be read from the last sum
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = 0;
#pragma unroll
    for (int w = 0; w < kGroup / 32; ++w) v += partial[w];
  }
  return v;
}

// One row per group of kGroup threads (32: a warp, blockDim.x / 32 rows a
// block; else the block), each thread holding kPer of the row's elements
// (cols <= kGroup * kPer) in registers, strided by kGroup so that a warp's
// loads are contiguous. kRms: RMSNorm (no mean, no bias: y = x * inv *
// scale, inv from the mean of squares; `bias` is not read), else LayerNorm.
template <typename T, int kGroup, int kPer, bool kRms>
static __global__ void NormRegKernel(const T* x, const T* scale,
                                     const T* bias, T* y, int64_t rows,
                                     int cols, float epsilon) {
  __shared__ float partial[32];
  const int groups = blockDim.x / kGroup;
  const int lane = threadIdx.x % kGroup;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * groups + threadIdx.x / kGroup;
  const int64_t step = static_cast<int64_t>(gridDim.x) * groups;
  // Every thread of a block runs the same number of iterations (the block
  // sum synchronises); rows past the end only take part in the sums.
  const int64_t iterations = (rows + step - 1) / step;
  for (int64_t it = 0; it < iterations; ++it) {
    const int64_t row = first + it * step;
    const bool live = row < rows;
    const T* xr = x + (live ? row : 0) * cols;
    float v[kPer];
    float sum = 0;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int j = lane + i * kGroup;
      v[i] = (live && j < cols) ? ToWide(xr[j]) : 0.0f;
      if constexpr (!kRms) sum += v[i];
    }
    float mean = 0;
    if constexpr (!kRms) {
      mean = GroupSum<kGroup>(sum, partial) / static_cast<float>(cols);
    }
    float sq = 0;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int j = lane + i * kGroup;
      const float d = j < cols ? v[i] - mean : 0.0f;
      sq += d * d;
    }
    const float var = GroupSum<kGroup>(sq, partial) / static_cast<float>(cols);
    const float inv = 1.0f / sqrtf(var + epsilon);
    if (!live) continue;
    T* yr = y + row * cols;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int j = lane + i * kGroup;
      if (j < cols) {
        if constexpr (kRms) {
          yr[j] = FromWide<T>(v[i] * inv * ToWide(scale[j]));
        } else {
          yr[j] = FromWide<T>((v[i] - mean) * inv * ToWide(scale[j]) +
                              ToWide(bias[j]));
        }
      }
    }
  }
}

template <typename T, int kGroup, int kPer, bool kRms>
void LaunchNormReg(const T* x, const T* scale, const T* bias, T* y,
                   int64_t rows, int64_t cols, float epsilon,
                   cudaStream_t stream) {
  constexpr int kBlock = kGroup == 32 ? 128 : kGroup;
  constexpr int kRowsPerBlock = kBlock / kGroup;
  int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  if (blocks > (int64_t{1} << 20)) blocks = int64_t{1} << 20;
  NormRegKernel<T, kGroup, kPer, kRms>
      <<<static_cast<unsigned int>(blocks), kBlock, 0, stream>>>(
          x, scale, bias, y, rows, static_cast<int>(cols), epsilon);
}

// The register kernel for rows of `cols` elements (LayerNorm, or RMSNorm
// with kRms); false where a row is longer than 8192 elements (or T is
// double).
template <typename T, bool kRms>
bool NormInRegisters(const T* x, const T* scale, const T* bias, T* y,
                     int64_t rows, int64_t cols, float epsilon,
                     cudaStream_t stream) {
  if constexpr (std::is_same_v<T, double>) {
    return false;
  } else {
    if (cols <= 128) {
      LaunchNormReg<T, 32, 4, kRms>(x, scale, bias, y, rows, cols, epsilon, stream);
    } else if (cols <= 256) {
      LaunchNormReg<T, 32, 8, kRms>(x, scale, bias, y, rows, cols, epsilon, stream);
    } else if (cols <= 512) {
      LaunchNormReg<T, 32, 16, kRms>(x, scale, bias, y, rows, cols, epsilon, stream);
    } else if (cols <= 1024) {
      LaunchNormReg<T, 32, 32, kRms>(x, scale, bias, y, rows, cols, epsilon, stream);
    } else if (cols <= 2048) {
      LaunchNormReg<T, 256, 8, kRms>(x, scale, bias, y, rows, cols, epsilon, stream);
    } else if (cols <= 4096) {
      LaunchNormReg<T, 256, 16, kRms>(x, scale, bias, y, rows, cols, epsilon, stream);
    } else if (cols <= 8192) {
      LaunchNormReg<T, 256, 32, kRms>(x, scale, bias, y, rows, cols, epsilon, stream);
    } else {
      return false;
    }
    return true;
  }
}

// Rows longer than the register kernel takes (and float64): one pass for
// the mean of squares, one to write y = x * inv * scale.
template <typename T>
static __global__ void RMSNormKernel(const T* x, const T* scale, T* y,
                                     int64_t rows, int64_t cols,
                                     float epsilon) {
  using W = typename Wide<T>::type;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    W sq = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const W v = ToWide(xr[j]);
      sq += v * v;
    }
    const W mean_sq = BlockReduce<W>(sq, SumOp()) / W(cols);
    const W inv = W(1) / sqrt(mean_sq + W(epsilon));
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      yr[j] = FromWide<T>(ToWide(xr[j]) * inv * ToWide(scale[j]));
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
    if (NormInRegisters<T, false>(
            static_cast<const T*>(x), static_cast<const T*>(scale),
            static_cast<const T*>(bias), static_cast<T*>(y), rows, cols,
            epsilon, stream)) {
      return;
    }
    LayerNormKernel<T><<<RowBlocks(rows), BlockFor(cols), 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(scale),
        static_cast<const T*>(bias), static_cast<T*>(y), rows, cols, epsilon);
  });
}

absl::Status LaunchRMSNorm(GpuDtype dtype, const void* x, const void* scale,
                           void* y, int64_t rows, int64_t cols, float epsilon,
                           cudaStream_t stream) {
  if (rows == 0 || cols == 0) return absl::OkStatus();
  return FloatDispatch(dtype, "RMSNorm", [&](auto tag) {
    using T = decltype(tag);
    if (NormInRegisters<T, true>(static_cast<const T*>(x),
                                 static_cast<const T*>(scale), nullptr,
                                 static_cast<T*>(y), rows, cols, epsilon,
                                 stream)) {
      return;
    }
    RMSNormKernel<T><<<RowBlocks(rows), BlockFor(cols), 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(scale),
        static_cast<T*>(y), rows, cols, epsilon);
  });
}

}  // namespace sluice::cuda
