// The setup of the signal ops (DFT, STFT, Window, MelWeightMatrix), written
// once for their CPU kernels (kernels/cpu/signal.cc) and CUDA kernels
// (kernels/cuda/signal_kernels.cc), so both accept and reject the same
// nodes and inputs with the same messages: the parsed attributes, Window's
// size check, and for DFT, STFT and MelWeightMatrix the checks of the input
// shape and of the host-memory parameters, the output shape and the view
// of the input each transform walks. CUDA-free.
//
//   ASSIGN_OR_RETURN(DftAttrs a, ParseDftAttrs(node));
//   ASSIGN_OR_RETURN(DftPlan p, PlanDft(x.shape(), ctx->input(1),
//                                       ctx->input(2), a.inverse, a.onesided));
//   ASSIGN_OR_RETURN(Tensor* y, ctx->allocate_output(0, p.out_shape));
//
// Value types and pure functions; thread-safe.
#ifndef SLUICE_KERNELS_SIGNAL_PARAMS_H_
#define SLUICE_KERNELS_SIGNAL_PARAMS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "graph/graph.h"

namespace sluice {

struct DftAttrs {
  bool inverse = false;
  bool onesided = false;
};
absl::StatusOr<DftAttrs> ParseDftAttrs(const Node& node);

struct StftAttrs {
  bool onesided = true;
};
absl::StatusOr<StftAttrs> ParseStftAttrs(const Node& node);

// The order matches cuda::WindowKind (kernels/cuda/signal.h).
enum class WindowFunction { kHann, kHamming, kBlackman };
struct WindowAttrs {
  DataType t = DT_INVALID;
  WindowFunction function = WindowFunction::kHann;
  bool periodic = true;
};
// INVALID_ARGUMENT for a window other than hann, hamming or blackman.
absl::StatusOr<WindowAttrs> ParseWindowAttrs(const Node& node);
// The window size: the single integer in the host tensor `size`, >= 0;
// INVALID_ARGUMENT otherwise.
absl::StatusOr<int64_t> WindowSize(const Tensor& size);

struct MelWeightMatrixAttrs {
  DataType t = DT_INVALID;
};
absl::StatusOr<MelWeightMatrixAttrs> ParseMelWeightMatrixAttrs(
    const Node& node);

// x viewed as [outer, len, inner, parts] (parts 1: real, 2: complex); the
// output [outer, out_len, inner, out_parts]. The transform has length n
// and reads the first `take` positions of each line (zeros after them);
// irfft (inverse and onesided) builds the Hermitian spectrum of n values
// from them and keeps the real part.
struct DftPlan {
  int64_t outer = 1, len = 0, inner = 1, parts = 1;
  int64_t n = 0, out_len = 0, out_parts = 2, take = 0;
  bool irfft = false;
  Shape out_shape;
};

// dft_length and axis: one int32/int64 value each, in host memory
// (dft_length < 1: the input's length, or 2 (len - 1) for irfft).
absl::StatusOr<DftPlan> PlanDft(const Shape& x, const Tensor& dft_length,
                                const Tensor& axis, bool inverse,
                                bool onesided);

// x [batch, len, parts] -> [batch, frames, bins, 2]; frame_step and
// frame_length in host memory (frame_length < 1: the window's length, or
// len); `window_elements` 0 for no window.
struct StftPlan {
  int64_t batch = 0, len = 0, parts = 1, step = 1, frame_length = 0;
  int64_t frames = 0, bins = 0;
  Shape out_shape;
};
absl::StatusOr<StftPlan> PlanStft(const Shape& x, const Tensor& frame_step,
                                  const Tensor& frame_length,
                                  int64_t window_elements, bool onesided);

// MelWeightMatrix: output [rows = dft_length / 2 + 1, mels]; filter i
// rises over bins [edges[i], edges[i + 1]] and falls over [edges[i + 1],
// edges[i + 2]) (the ONNX reference's edges: float32 up to the mel scale,
// then double, floored to bins). The five inputs are host-memory scalars;
// INVALID_ARGUMENT for bad ones or edges past the last bin.
struct MelPlan {
  int64_t rows = 0, mels = 0;
  std::vector<int64_t> edges;  // mels + 2
};
absl::StatusOr<MelPlan> PlanMelWeightMatrix(const Tensor& num_mel_bins,
                                            const Tensor& dft_length,
                                            const Tensor& sample_rate,
                                            const Tensor& lower_edge_hertz,
                                            const Tensor& upper_edge_hertz);

// The weight of bin j in filter i (REQUIRES: plan from PlanMelWeightMatrix).
inline double MelWeight(int64_t l, int64_t c, int64_t h, int64_t j) {
  if (j >= c && j < h) return static_cast<double>(h - j) / (h - c);
  if (c == l) return j == c ? 1.0 : 0.0;
  if (j >= l && j <= c) return static_cast<double>(j - l) / (c - l);
  return 0.0;
}

}  // namespace sluice

#endif  // SLUICE_KERNELS_SIGNAL_PARAMS_H_
