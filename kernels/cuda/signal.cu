// The windows, DFT and STFT: one thread per output value, in double.
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

template <typename T>
__device__ __forceinline__ double Load(const T* p) {
  return static_cast<double>(ToWide(*p));
}

// acc += (re + i im) * e^(i w ((s k) mod n)).
__device__ __forceinline__ void Accumulate(double re, double im, double w,
                                           int64_t s, int64_t k, int64_t n,
                                           double* acc_re, double* acc_im) {
  const double a = w * static_cast<double>((s * k) % n);
  const double c = cos(a), sn = sin(a);
  *acc_re += re * c - im * sn;
  *acc_im += re * sn + im * c;
}

template <typename T>
static __global__ void DftKernel(const T* x, T* y, DftGeometry g) {
  const int64_t total = g.outer * g.out_len * g.inner;
  const double w = g.sign * 2.0 * M_PI / static_cast<double>(g.n);
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t j = e % g.inner;
    const int64_t k = (e / g.inner) % g.out_len;
    const int64_t o = e / (g.inner * g.out_len);
    // Input position s of this line (complex; zero past `take`).
    auto at = [&](int64_t s, double* re, double* im) {
      if (s >= g.take) {
        *re = 0;
        *im = 0;
        return;
      }
      const T* p = x + ((o * g.len + s) * g.inner + j) * g.parts;
      *re = Load(p);
      *im = g.parts == 2 ? Load(p + 1) : 0.0;
    };
    double acc_re = 0, acc_im = 0;
    const int64_t terms = g.irfft ? g.n : g.take;
    for (int64_t s = 0; s < terms; ++s) {
      double re, im;
      if (g.irfft && s > g.n / 2) {
        at(g.n - s, &re, &im);  // the conjugate of the mirrored bin
        im = -im;
      } else {
        at(s, &re, &im);
      }
      Accumulate(re, im, w, s, k, g.n, &acc_re, &acc_im);
    }
    using W = typename Wide<T>::type;
    T* q = y + ((o * g.out_len + k) * g.inner + j) * g.out_parts;
    q[0] = FromWide<T>(static_cast<W>(acc_re * g.scale));
    if (g.out_parts == 2) q[1] = FromWide<T>(static_cast<W>(acc_im * g.scale));
  }
}

template <typename T>
static __global__ void StftKernel(const T* x, const T* window, T* y,
                                  StftGeometry g) {
  const int64_t total = g.batch * g.frames * g.bins;
  const double w = -2.0 * M_PI / static_cast<double>(g.frame_length);
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t k = e % g.bins;
    const int64_t f = (e / g.bins) % g.frames;
    const int64_t b = e / (g.bins * g.frames);
    double acc_re = 0, acc_im = 0;
    for (int64_t s = 0; s < g.frame_length; ++s) {
      const T* p = x + (b * g.len + f * g.step + s) * g.parts;
      const double win = window ? Load(window + s) : 1.0;
      const double re = win * Load(p);
      const double im = g.parts == 2 ? win * Load(p + 1) : 0.0;
      Accumulate(re, im, w, s, k, g.frame_length, &acc_re, &acc_im);
    }
    using W = typename Wide<T>::type;
    T* q = y + e * 2;
    q[0] = FromWide<T>(static_cast<W>(acc_re));
    q[1] = FromWide<T>(static_cast<W>(acc_im));
  }
}

template <typename T>
static __global__ void MelKernel(T* y, int64_t rows, int64_t mels,
                                 MelEdges e) {
  const int64_t total = rows * e.count;
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < total;
       t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t j = t / e.count;
    const int i = static_cast<int>(t % e.count);
    const int64_t l = e.edges[i], c = e.edges[i + 1], h = e.edges[i + 2];
    double w = 0;  // MelWeight (kernels/signal_params.h)
    if (j >= c && j < h) {
      w = static_cast<double>(h - j) / static_cast<double>(h - c);
    } else if (c == l) {
      w = j == c ? 1.0 : 0.0;
    } else if (j >= l && j <= c) {
      w = static_cast<double>(j - l) / static_cast<double>(c - l);
    }
    y[j * mels + e.first + i] =
        FromWide<T>(static_cast<typename Wide<T>::type>(w));
  }
}

}  // namespace

bool HasMelKernel(GpuDtype dtype) {
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) { found = kIsArith<decltype(tag)>; });
  return found;
}

absl::Status LaunchMelWeights(GpuDtype dtype, void* y, int64_t rows,
                              int64_t mels, const MelEdges& edges,
                              cudaStream_t stream) {
  const int64_t total = rows * edges.count;
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsArith<T>) {
      found = true;
      if (total == 0) return;
      MelKernel<T><<<GridFor(total), kThreads, 0, stream>>>(
          static_cast<T*>(y), rows, mels, edges);
    }
  });
  if (!found) {
    return absl::UnimplementedError(absl::StrCat(
        "no CUDA MelWeightMatrix for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus("MelWeightMatrix");
}

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

absl::Status LaunchDft(GpuDtype dtype, const void* x, void* y,
                       const DftGeometry& g, cudaStream_t stream) {
  const int64_t total = g.outer * g.out_len * g.inner;
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      found = true;
      if (total == 0) return;
      DftKernel<T><<<GridFor(total), kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), g);
    }
  });
  if (!found) {
    return absl::UnimplementedError(
        absl::StrCat("no CUDA DFT for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus("DFT");
}

absl::Status LaunchStft(GpuDtype dtype, const void* x, const void* window,
                        void* y, const StftGeometry& g, cudaStream_t stream) {
  const int64_t total = g.batch * g.frames * g.bins;
  bool found = false;
  DispatchDtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsFloat<T>) {
      found = true;
      if (total == 0) return;
      StftKernel<T><<<GridFor(total), kThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<const T*>(window),
          static_cast<T*>(y), g);
    }
  });
  if (!found) {
    return absl::UnimplementedError(
        absl::StrCat("no CUDA STFT for dtype ", static_cast<int>(dtype)));
  }
  return LaunchStatus("STFT");
}

}  // namespace sluice::cuda
