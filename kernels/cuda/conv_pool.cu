// Direct NCHW or NHWC convolution and pooling: one thread per output
// element.
#include <cmath>

#include "kernels/cuda/conv_pool.h"
#include "kernels/cuda/device_utils.cuh"

namespace sluice::cuda {
namespace {

static __global__ void Conv2DKernel(ConvGeometry g, const float* input,
                                    const float* filter, float* output) {
  const int64_t total = g.n * g.o * g.oh * g.ow;
  const int64_t cg = g.c / g.group;   // input channels per group
  const int64_t og = g.o / g.group;   // output channels per group
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t x, y, oc, b;
    if (g.channels_last) {
      oc = i % g.o;
      x = (i / g.o) % g.ow;
      y = (i / (g.o * g.ow)) % g.oh;
      b = i / (g.o * g.ow * g.oh);
    } else {
      x = i % g.ow;
      y = (i / g.ow) % g.oh;
      oc = (i / (g.ow * g.oh)) % g.o;
      b = i / (g.ow * g.oh * g.o);
    }
    const int64_t group = oc / og;
    float acc = 0.f;
    if (g.channels_last) {
      // input [n, h, w, c], filter [o, kh, kw, cg]: the channels innermost.
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        const int64_t iy = y * g.stride_h - g.pad_top + ky * g.dilation_h;
        if (iy < 0 || iy >= g.h) continue;
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          const int64_t ix = x * g.stride_w - g.pad_left + kx * g.dilation_w;
          if (ix < 0 || ix >= g.w) continue;
          const float* in = input + ((b * g.h + iy) * g.w + ix) * g.c + group * cg;
          const float* f = filter + ((oc * g.kh + ky) * g.kw + kx) * cg;
          for (int64_t ci = 0; ci < cg; ++ci) acc += in[ci] * f[ci];
        }
      }
      output[i] = acc;
      continue;
    }
    for (int64_t ci = 0; ci < cg; ++ci) {
      const float* in = input + ((b * g.c) + group * cg + ci) * g.h * g.w;
      const float* f = filter + ((oc * cg) + ci) * g.kh * g.kw;
      for (int64_t ky = 0; ky < g.kh; ++ky) {
        const int64_t iy = y * g.stride_h - g.pad_top + ky * g.dilation_h;
        if (iy < 0 || iy >= g.h) continue;
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          const int64_t ix = x * g.stride_w - g.pad_left + kx * g.dilation_w;
          if (ix < 0 || ix >= g.w) continue;
          acc += in[iy * g.w + ix] * f[ky * g.kw + kx];
        }
      }
    }
    output[i] = acc;
  }
}

// Max or average over each window, accumulated in float (double for
// double), stored in T.
template <bool kMax, typename T>
static __global__ void PoolKernel(ConvGeometry g, bool count_include_pad,
                                  const T* input, T* output) {
  using W = typename Wide<T>::type;
  const int64_t total = g.n * g.c * g.oh * g.ow;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    // NCHW: element (y, x) of plane `plane`, which is w apart per row and
    // 1 per column; NHWC: channel c of image b, rows w*c apart, columns c.
    int64_t x, y;
    const T* in;
    int64_t row_step, col_step;
    if (g.channels_last) {
      const int64_t c = i % g.c;
      x = (i / g.c) % g.ow;
      y = (i / (g.c * g.ow)) % g.oh;
      const int64_t b = i / (g.c * g.ow * g.oh);
      in = input + b * g.h * g.w * g.c + c;
      row_step = g.w * g.c;
      col_step = g.c;
    } else {
      x = i % g.ow;
      y = (i / g.ow) % g.oh;
      const int64_t plane = i / (g.ow * g.oh);
      in = input + plane * g.h * g.w;
      row_step = g.w;
      col_step = 1;
    }
    W acc = kMax ? W(-INFINITY) : W(0);
    int64_t count = 0;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      const int64_t iy = y * g.stride_h - g.pad_top + ky;
      if (iy < 0 || iy >= g.h) continue;
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        const int64_t ix = x * g.stride_w - g.pad_left + kx;
        if (ix < 0 || ix >= g.w) continue;
        const W v = ToWide(in[iy * row_step + ix * col_step]);
        if (kMax) {
          acc = MaxOp()(acc, v);
        } else {
          acc += v;
        }
        ++count;
      }
    }
    if (!kMax) {
      const int64_t div = count_include_pad ? g.kh * g.kw : count;
      acc = div > 0 ? acc / static_cast<W>(div) : W(0);
    }
    output[i] = FromWide<T>(acc);
  }
}

template <bool kMax>
absl::Status LaunchPool(const ConvGeometry& g, bool count_include_pad,
                        GpuDtype dtype, const void* input, void* output,
                        cudaStream_t stream) {
  const int64_t n = g.n * g.c * g.oh * g.ow;
  if (n == 0) return absl::OkStatus();
  auto launch = [&](auto zero) {
    using T = decltype(zero);
    PoolKernel<kMax, T><<<GridFor(n), kThreads, 0, stream>>>(
        g, count_include_pad, static_cast<const T*>(input),
        static_cast<T*>(output));
  };
  switch (dtype) {
    case GpuDtype::kFloat: launch(float{}); break;
    case GpuDtype::kDouble: launch(double{}); break;
    case GpuDtype::kHalf: launch(__half{}); break;
    case GpuDtype::kBFloat16: launch(__nv_bfloat16{}); break;
    default:
      return absl::UnimplementedError("CUDA pooling: not a float dtype");
  }
  return LaunchStatus(kMax ? "MaxPool" : "AvgPool");
}

}  // namespace

absl::Status LaunchConv2D(const ConvGeometry& g, const float* input,
                          const float* filter, float* output,
                          cudaStream_t stream) {
  const int64_t n = g.n * g.o * g.oh * g.ow;
  if (n == 0) return absl::OkStatus();
  Conv2DKernel<<<GridFor(n), kThreads, 0, stream>>>(g, input, filter, output);
  return LaunchStatus("Conv2D");
}

absl::Status LaunchMaxPool(const ConvGeometry& g, GpuDtype dtype,
                           const void* input, void* output,
                           cudaStream_t stream) {
  return LaunchPool<true>(g, false, dtype, input, output, stream);
}

absl::Status LaunchAvgPool(const ConvGeometry& g, bool count_include_pad,
                           GpuDtype dtype, const void* input, void* output,
                           cudaStream_t stream) {
  return LaunchPool<false>(g, count_include_pad, dtype, input, output, stream);
}

}  // namespace sluice::cuda
