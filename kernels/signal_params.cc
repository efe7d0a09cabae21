#include "kernels/signal_params.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/host_params.h"

namespace sluice {

absl::StatusOr<DftAttrs> ParseDftAttrs(const Node& node) {
  DftAttrs a;
  ASSIGN_OR_RETURN(a.inverse, node.attrs().GetBool("inverse"));
  ASSIGN_OR_RETURN(a.onesided, node.attrs().GetBool("onesided"));
  return a;
}

absl::StatusOr<StftAttrs> ParseStftAttrs(const Node& node) {
  StftAttrs a;
  ASSIGN_OR_RETURN(a.onesided, node.attrs().GetBool("onesided"));
  return a;
}

absl::StatusOr<WindowAttrs> ParseWindowAttrs(const Node& node) {
  WindowAttrs a;
  ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
  ASSIGN_OR_RETURN(std::string window, node.attrs().GetString("window"));
  ASSIGN_OR_RETURN(a.periodic, node.attrs().GetBool("periodic"));
  if (window == "hann") {
    a.function = WindowFunction::kHann;
  } else if (window == "hamming") {
    a.function = WindowFunction::kHamming;
  } else if (window == "blackman") {
    a.function = WindowFunction::kBlackman;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "window must be hann, hamming or blackman, got ", window));
  }
  return a;
}

absl::StatusOr<int64_t> WindowSize(const Tensor& size) {
  ASSIGN_OR_RETURN(int64_t n, HostScalarInt(size, "the window size"));
  if (n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the window size must be >= 0, got ", n));
  }
  return n;
}

absl::StatusOr<MelWeightMatrixAttrs> ParseMelWeightMatrixAttrs(
    const Node& node) {
  MelWeightMatrixAttrs a;
  ASSIGN_OR_RETURN(a.t, node.attrs().GetType("T"));
  return a;
}

absl::StatusOr<DftPlan> PlanDft(const Shape& x, const Tensor& dft_length,
                                const Tensor& axis_t, bool inverse,
                                bool onesided) {
  DftPlan p;
  const int rank = x.rank();
  p.parts = rank >= 2 ? x.dim(rank - 1) : 0;
  if (rank < 2 || (p.parts != 1 && p.parts != 2)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DFT's input must be [..., N, 1] or [..., N, 2], got ",
        x.DebugString()));
  }
  ASSIGN_OR_RETURN(int64_t axis_v, HostScalarInt(axis_t, "DFT's axis"));
  const int64_t axis = axis_v < 0 ? axis_v + rank : axis_v;
  if (axis < 0 || axis >= rank - 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DFT axis ", axis_v, " out of range for ", x.DebugString()));
  }
  p.len = x.dim(static_cast<int>(axis));
  ASSIGN_OR_RETURN(int64_t n, HostScalarInt(dft_length, "DFT's dft_length"));
  p.irfft = inverse && onesided;
  if (n < 1) n = p.irfft ? 2 * (p.len - 1) : p.len;
  if (n < 1) {
    return absl::InvalidArgumentError("the DFT length must be positive");
  }
  p.n = n;
  p.out_len = onesided && !inverse ? n / 2 + 1 : n;
  std::vector<int64_t> dims(x.dims().begin(), x.dims().end());
  dims[axis] = p.out_len;
  dims.back() = p.irfft ? 1 : 2;
  p.out_parts = dims.back();
  p.out_shape = Shape(dims);
  for (int i = 0; i < axis; ++i) p.outer *= dims[i];
  for (int i = static_cast<int>(axis) + 1; i < rank - 1; ++i) p.inner *= dims[i];
  p.take = std::min(p.irfft ? n / 2 + 1 : n, p.len);
  return p;
}

absl::StatusOr<StftPlan> PlanStft(const Shape& x, const Tensor& frame_step,
                                  const Tensor& frame_length,
                                  int64_t window_elements, bool onesided) {
  if (x.rank() != 3 || (x.dim(2) != 1 && x.dim(2) != 2)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "STFT's signal must be [B, L, 1 or 2], got ", x.DebugString()));
  }
  StftPlan p;
  p.batch = x.dim(0);
  p.len = x.dim(1);
  p.parts = x.dim(2);
  ASSIGN_OR_RETURN(p.step, HostScalarInt(frame_step, "frame_step"));
  ASSIGN_OR_RETURN(int64_t fl, HostScalarInt(frame_length, "frame_length"));
  if (fl < 1) fl = window_elements > 0 ? window_elements : p.len;
  if (p.step < 1 || fl > p.len ||
      (window_elements > 0 && window_elements != fl)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "STFT needs frame_step >= 1 (got ", p.step, "), frame_length <= ",
        p.len, " (got ", fl, ") and a window of frame_length values (got ",
        window_elements, ")"));
  }
  p.frame_length = fl;
  p.frames = 1 + (p.len - fl) / p.step;
  p.bins = onesided ? fl / 2 + 1 : fl;
  p.out_shape = Shape({p.batch, p.frames, p.bins, 2});
  return p;
}

absl::StatusOr<MelPlan> PlanMelWeightMatrix(const Tensor& num_mel_bins,
                                            const Tensor& dft_length,
                                            const Tensor& sample_rate,
                                            const Tensor& lower_edge_hertz,
                                            const Tensor& upper_edge_hertz) {
  ASSIGN_OR_RETURN(int64_t mels, HostScalarInt(num_mel_bins, "num_mel_bins"));
  ASSIGN_OR_RETURN(int64_t dft, HostScalarInt(dft_length, "dft_length"));
  ASSIGN_OR_RETURN(int64_t rate, HostScalarInt(sample_rate, "sample_rate"));
  if (mels < 1 || dft < 1 || rate < 1 || lower_edge_hertz.NumElements() != 1 ||
      upper_edge_hertz.NumElements() != 1) {
    return absl::InvalidArgumentError(
        "MelWeightMatrix needs positive num_mel_bins, dft_length and "
        "sample_rate and one lower and upper edge");
  }
  MelPlan p;
  p.rows = dft / 2 + 1;
  p.mels = mels;
  auto mel = [](float hz) {
    const float m = 2595.0f * std::log1p(hz / 700.0f);
    return static_cast<double>(m) / std::log(10.0);
  };
  const double lo = mel(lower_edge_hertz.data<float>()[0]);
  const double hi = mel(upper_edge_hertz.data<float>()[0]);
  const double step = (hi - lo) / static_cast<double>(mels + 2);
  p.edges.resize(mels + 2);
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double hz =
        700.0 * std::expm1((i * step + lo) / 2595.0 * std::log(10.0));
    p.edges[i] = static_cast<int64_t>(std::floor((dft + 1) * hz / rate));
  }
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t l = p.edges[i], c = p.edges[i + 1], h = p.edges[i + 2];
    if (l < 0 || h > p.rows || c >= p.rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the mel edges reach bin ", std::max(h, c), " of ", p.rows,
          "; lower the upper edge or raise dft_length"));
    }
  }
  return p;
}

}  // namespace sluice
