// The parsed attributes of the signal ops (DFT, STFT, Window,
// MelWeightMatrix) and Window's size check, shared by their CPU kernels
// (kernels/cpu/signal.cc) and CUDA kernels (kernels/cuda/signal_kernels.cc),
// so both accept and reject the same nodes with the same messages.
// CUDA-free; the shapes of DFT and STFT are in kernels/signal_plan.h.
//
//   ASSIGN_OR_RETURN(WindowAttrs a, ParseWindowAttrs(node));
//   ASSIGN_OR_RETURN(int64_t size, WindowSize(ctx->input(0)));
//
// Pure functions; thread-safe.
#ifndef SLUICE_KERNELS_SIGNAL_ATTRS_H_
#define SLUICE_KERNELS_SIGNAL_ATTRS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/dtype.h"
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

}  // namespace sluice

#endif  // SLUICE_KERNELS_SIGNAL_ATTRS_H_
