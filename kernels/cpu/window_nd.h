// N-d sliding-window geometry shared by the CPU ConvND, ConvTranspose,
// Col2Im and PoolND kernels: the spatial sizes of one image, the window and
// the output, and im2col / col2im over any number of spatial dims, plus the
// double conversions the vision kernels compute in.
//
//   WindowNd g = ...;                 // in, out, kernel, strides, ...
//   Im2ColNd(g, image, cols);         // cols [C * prod(k), prod(out)]
//   Col2ImNd(g, cols, image);         // image += the columns, scattered back
//
// Stateless functions; thread-safe.
#ifndef SLUICE_KERNELS_CPU_WINDOW_ND_H_
#define SLUICE_KERNELS_CPU_WINDOW_ND_H_

#include <cstdint>
#include <type_traits>
#include <vector>

namespace sluice::cpu {

struct WindowNd {
  int64_t channels = 1;                   // C of one image (one group)
  std::vector<int64_t> in, out, kernel;   // spatial sizes
  std::vector<int64_t> strides, dilations, pad_begin;
  int64_t InSize() const;
  int64_t OutSize() const;
  int64_t KernelSize() const;
};

// cols[(c * K + k) * OUT + o] = image[c][o * s - pad + k * d] (0 outside),
// K = prod(kernel), OUT = prod(out). `image` is [C, in...].
void Im2ColNd(const WindowNd& g, const float* image, float* cols);
// The adjoint: image[c][o * s - pad + k * d] += cols[(c * K + k) * OUT + o]
// for positions inside the image. `image` is not cleared first.
void Col2ImNd(const WindowNd& g, const float* cols, float* image);

// Element conversions through double for every arithmetic dtype, the 16-bit
// floats included.
template <typename T>
double ToDouble(T v) {
  if constexpr (std::is_arithmetic_v<T>) {
    return static_cast<double>(v);
  } else {
    return static_cast<double>(static_cast<float>(v));
  }
}
template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_arithmetic_v<T>) {
    return static_cast<T>(v);
  } else {
    return static_cast<T>(static_cast<float>(v));
  }
}

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_WINDOW_ND_H_
