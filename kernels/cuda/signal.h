// Host launchers for the signal ops on the GPU: the hann, hamming and
// blackman windows, DFT and STFT as direct O(n^2) transforms, one thread
// per output value, and the MelWeightMatrix filters; all computed in
// double, as the CPU kernels do (kernels/cpu/signal.cc).
//
//   RETURN_IF_ERROR(LaunchWindow(GpuDtype::kFloat, WindowKind::kHann, y,
//                                size, /*periodic=*/true, s));
//   DftGeometry g = ...;  // from the CPU kernel's shape logic
//   RETURN_IF_ERROR(LaunchDft(GpuDtype::kFloat, x, y, g, s));
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CUDA_SIGNAL_H_
#define SLUICE_KERNELS_CUDA_SIGNAL_H_

#include <cstdint>

#include "absl/status/status.h"
#include "cuda_runtime_api.h"
#include "kernels/cuda/launch_types.h"

namespace sluice::cuda {

enum class WindowKind { kHann, kHamming, kBlackman };

// y[i] for i < size, with a = pi i / (periodic ? size : size - 1):
// sin^2 a (hann), 25/46 - 21/46 cos 2a (hamming), 0.42 - 0.5 cos 2a +
// 0.08 cos 4a (blackman). Float dtypes only: the device's sin and cos may
// differ from the host's in the last bit of a double, which truncation to
// an integer dtype could turn into a whole unit.
bool HasWindowKernel(GpuDtype dtype);
absl::Status LaunchWindow(GpuDtype dtype, WindowKind kind, void* y,
                          int64_t size, bool periodic, cudaStream_t stream);

// DFT of x viewed as [outer, len, inner, parts] into y [outer, out_len,
// inner, out_parts]: out[k] = scale * sum_s line[s] e^(sign 2 pi i s k / n)
// where line is the first `take` input positions (zeros after them) or,
// for irfft, the Hermitian spectrum of n values built from them.
struct DftGeometry {
  int64_t outer = 1, len = 0, inner = 1, parts = 1;
  int64_t n = 0, out_len = 0, out_parts = 2, take = 0;
  bool irfft = false;
  double sign = -1, scale = 1;
};
absl::Status LaunchDft(GpuDtype dtype, const void* x, void* y,
                       const DftGeometry& g, cudaStream_t stream);

// STFT of x [batch, len, parts] into y [batch, frames, bins, 2]: frame f
// is x[f * step, f * step + frame_length) times the window (null: ones),
// transformed forward.
struct StftGeometry {
  int64_t batch = 0, len = 0, parts = 1, step = 1, frame_length = 0;
  int64_t frames = 0, bins = 0;
};
absl::Status LaunchStft(GpuDtype dtype, const void* x, const void* window,
                        void* y, const StftGeometry& g, cudaStream_t stream);

// MelWeightMatrix columns [first, first + count) of y [rows, mels]: the
// filters' bin edges (computed on the host, kernels/signal_params.h) passed
// by value, kMelChunk filters per launch.
inline constexpr int kMelChunk = 128;
struct MelEdges {
  int64_t first = 0;
  int count = 0;
  int64_t edges[kMelChunk + 2] = {};  // edges[i] is the plan's first + i
};
bool HasMelKernel(GpuDtype dtype);  // floats, int32 and int64
absl::Status LaunchMelWeights(GpuDtype dtype, void* y, int64_t rows,
                              int64_t mels, const MelEdges& edges,
                              cudaStream_t stream);

}  // namespace sluice::cuda

#endif  // SLUICE_KERNELS_CUDA_SIGNAL_H_
