// ConvND (gather over the window), ConvTranspose and Col2Im (gather over
// the window positions that reach each image element), one thread per
// output element. ConvND and ConvTranspose take float32, float16, bfloat16
// (accumulating in float, as the CPU's GEMM does) and float64 (in double);
// Col2Im float32.
#include "kernels/cuda/conv_nd.h"
#include "kernels/cuda/device_utils.cuh"

namespace sluice::cuda {
namespace {

__device__ int64_t Product(const int64_t* v, int n) {
  int64_t p = 1;
  for (int d = 0; d < n; ++d) p *= v[d];
  return p;
}

// Splits flat row-major index i over dims[0..n) into idx.
__device__ void Unflatten(int64_t i, const int64_t* dims, int n,
                          int64_t* idx) {
  for (int d = n - 1; d >= 0; --d) {
    idx[d] = i % dims[d];
    i /= dims[d];
  }
}

// The window position along each dim whose tap k lands on image index
// `at`; false when there is none (not a multiple of the stride, or out of
// range).
__device__ bool PositionFor(const WindowGeometry& g, const int64_t* at,
                            int64_t t, int64_t* pos_flat) {
  int64_t k[kMaxSpatialDims];
  Unflatten(t, g.kernel, g.n, k);
  int64_t flat = 0;
  for (int d = 0; d < g.n; ++d) {
    const int64_t num = at[d] + g.pad_begin[d] - k[d] * g.dilations[d];
    if (num < 0 || num % g.strides[d] != 0) return false;
    const int64_t o = num / g.strides[d];
    if (o >= g.positions[d]) return false;
    flat = flat * g.positions[d] + o;
  }
  *pos_flat = flat;
  return true;
}

template <typename T>
static __global__ void ConvNdKernel(WindowGeometry g, const T* x,
                                    const T* f, T* y) {
  using W = typename Wide<T>::type;
  const int64_t out_plane = Product(g.positions, g.n);
  const int64_t in_plane = Product(g.image, g.n);
  const int64_t ksize = Product(g.kernel, g.n);
  const int64_t cg = g.in_channels / g.group;
  const int64_t og = g.out_channels / g.group;
  const int64_t total = g.batch * g.out_channels * out_plane;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    int64_t o[kMaxSpatialDims];
    Unflatten(e % out_plane, g.positions, g.n, o);
    const int64_t oc = (e / out_plane) % g.out_channels;
    const int64_t b = e / (out_plane * g.out_channels);
    const int64_t first_ic = (oc / og) * cg;
    W acc = 0;
    for (int64_t t = 0; t < ksize; ++t) {
      int64_t k[kMaxSpatialDims];
      Unflatten(t, g.kernel, g.n, k);
      int64_t off = 0;
      bool inside = true;
      for (int d = 0; d < g.n; ++d) {
        const int64_t i =
            o[d] * g.strides[d] - g.pad_begin[d] + k[d] * g.dilations[d];
        if (i < 0 || i >= g.image[d]) {
          inside = false;
          break;
        }
        off = off * g.image[d] + i;
      }
      if (!inside) continue;
      for (int64_t c = 0; c < cg; ++c) {
        acc += ToWide(x[(b * g.in_channels + first_ic + c) * in_plane + off]) *
               ToWide(f[(oc * cg + c) * ksize + t]);
      }
    }
    y[e] = FromWide<T>(acc);
  }
}

template <typename T>
static __global__ void ConvTransposeNdKernel(WindowGeometry g, const T* x,
                                             const T* f, T* y) {
  using W = typename Wide<T>::type;
  const int64_t out_plane = Product(g.image, g.n);
  const int64_t in_plane = Product(g.positions, g.n);
  const int64_t ksize = Product(g.kernel, g.n);
  const int64_t cg = g.in_channels / g.group;
  const int64_t og = g.out_channels / g.group;
  const int64_t total = g.batch * g.out_channels * out_plane;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    int64_t at[kMaxSpatialDims];
    Unflatten(e % out_plane, g.image, g.n, at);
    const int64_t m = (e / out_plane) % g.out_channels;
    const int64_t b = e / (out_plane * g.out_channels);
    const int64_t gi = m / og, ml = m % og;
    W acc = 0;
    for (int64_t t = 0; t < ksize; ++t) {
      int64_t pos = 0;
      if (!PositionFor(g, at, t, &pos)) continue;
      for (int64_t c = 0; c < cg; ++c) {
        const int64_t ic = gi * cg + c;
        acc += ToWide(x[(b * g.in_channels + ic) * in_plane + pos]) *
               ToWide(f[(ic * og + ml) * ksize + t]);
      }
    }
    y[e] = FromWide<T>(acc);
  }
}

static __global__ void Col2ImNdKernel(WindowGeometry g, const float* x,
                                      float* y) {
  const int64_t out_plane = Product(g.image, g.n);
  const int64_t blocks = Product(g.positions, g.n);
  const int64_t ksize = Product(g.kernel, g.n);
  const int64_t total = g.batch * g.out_channels * out_plane;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    int64_t at[kMaxSpatialDims];
    Unflatten(e % out_plane, g.image, g.n, at);
    const int64_t bc = e / out_plane;  // b * C + c
    float acc = 0;
    for (int64_t t = 0; t < ksize; ++t) {
      int64_t pos = 0;
      if (!PositionFor(g, at, t, &pos)) continue;
      acc += x[(bc * ksize + t) * blocks + pos];
    }
    y[e] = acc;
  }
}

int64_t HostProduct(const int64_t* v, int n) {
  int64_t p = 1;
  for (int d = 0; d < n; ++d) p *= v[d];
  return p;
}

template <typename T>
absl::Status LaunchTyped(bool transpose, const WindowGeometry& g,
                         const void* x, const void* filter, void* y,
                         cudaStream_t stream) {
  const int64_t plane = HostProduct(transpose ? g.image : g.positions, g.n);
  const int64_t total = g.batch * g.out_channels * plane;
  if (total == 0) return absl::OkStatus();
  const T* xt = static_cast<const T*>(x);
  const T* ft = static_cast<const T*>(filter);
  T* yt = static_cast<T*>(y);
  if (transpose) {
    ConvTransposeNdKernel<T><<<GridFor(total), kThreads, 0, stream>>>(g, xt, ft, yt);
    return LaunchStatus("ConvTranspose");
  }
  ConvNdKernel<T><<<GridFor(total), kThreads, 0, stream>>>(g, xt, ft, yt);
  return LaunchStatus("ConvND");
}

absl::Status LaunchConv(bool transpose, GpuDtype dtype,
                        const WindowGeometry& g, const void* x,
                        const void* filter, void* y, cudaStream_t stream) {
  switch (dtype) {
    case GpuDtype::kFloat:
      return LaunchTyped<float>(transpose, g, x, filter, y, stream);
    case GpuDtype::kHalf:
      return LaunchTyped<__half>(transpose, g, x, filter, y, stream);
    case GpuDtype::kBFloat16:
      return LaunchTyped<__nv_bfloat16>(transpose, g, x, filter, y, stream);
    case GpuDtype::kDouble:
      return LaunchTyped<double>(transpose, g, x, filter, y, stream);
    default:
      return absl::UnimplementedError(
          "the CUDA convolution kernels take float32, float16, bfloat16 or "
          "float64");
  }
}

}  // namespace

absl::Status LaunchConvNd(GpuDtype dtype, const WindowGeometry& g,
                          const void* x, const void* filter, void* y,
                          cudaStream_t stream) {
  return LaunchConv(false, dtype, g, x, filter, y, stream);
}

absl::Status LaunchConvTransposeNd(GpuDtype dtype, const WindowGeometry& g,
                                   const void* x, const void* filter, void* y,
                                   cudaStream_t stream) {
  return LaunchConv(true, dtype, g, x, filter, y, stream);
}

absl::Status LaunchCol2ImNd(const WindowGeometry& g, const float* x, float* y,
                            cudaStream_t stream) {
  const int64_t total = g.batch * g.out_channels * HostProduct(g.image, g.n);
  if (total == 0) return absl::OkStatus();
  Col2ImNdKernel<<<GridFor(total), kThreads, 0, stream>>>(g, x, y);
  return LaunchStatus("Col2Im");
}

}  // namespace sluice::cuda
