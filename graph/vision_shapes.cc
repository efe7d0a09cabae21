#include "graph/vision_shapes.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/shape.h"
#include "core/status_macros.h"
#include "graph/shape_fns.h"

namespace sluice {
namespace {

// A size computed in double, checked to be a valid dimension.
absl::StatusOr<int64_t> CheckedDim(double v, absl::string_view what) {
  if (!(v >= 0) || v > static_cast<double>(kMaxElements)) {
    return Invalid(absl::StrCat(what, " gives an output size of ", v));
  }
  return static_cast<int64_t>(v);
}

}  // namespace

absl::Status ResizeDims(absl::Span<const int64_t> in,
                        absl::Span<const float> scales,
                        absl::Span<const int64_t> sizes,
                        absl::Span<const int64_t> axes_in,
                        absl::string_view policy, std::vector<int64_t>* out,
                        std::vector<double>* scale_out) {
  const int rank = static_cast<int>(in.size());
  std::vector<int64_t> axes(axes_in.begin(), axes_in.end());
  if (axes.empty()) {
    for (int i = 0; i < rank; ++i) axes.push_back(i);
  }
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) {
      return Invalid(absl::StrCat("axis ", a, " out of range for rank ", rank));
    }
    if (a < 0) a += rank;
  }
  const size_t n = axes.size();
  if (scales.empty() == sizes.empty()) {
    return Invalid("Resize needs exactly one of scales and sizes");
  }
  if (!scales.empty() && scales.size() != n) {
    return Invalid(absl::StrCat(scales.size(), " scales for ", n, " axes"));
  }
  if (!sizes.empty() && sizes.size() != n) {
    return Invalid(absl::StrCat(sizes.size(), " sizes for ", n, " axes"));
  }
  out->assign(in.begin(), in.end());
  scale_out->assign(rank, 1.0);
  if (!scales.empty()) {
    for (size_t i = 0; i < n; ++i) {
      const double s = scales[i];
      if (!(s > 0) || !std::isfinite(s)) {
        return Invalid(absl::StrCat("scale ", s, " must be positive"));
      }
      (*scale_out)[axes[i]] = s;
      auto d = CheckedDim(std::floor(s * static_cast<double>(in[axes[i]])),
                          "scale");
      if (!d.ok()) return d.status();
      (*out)[axes[i]] = *d;
    }
    return absl::OkStatus();
  }
  for (size_t i = 0; i < n; ++i) {
    if (sizes[i] < 0) return Invalid(absl::StrCat("size ", sizes[i], " < 0"));
    if (in[axes[i]] == 0) return Invalid("cannot resize an empty dimension");
  }
  if (policy == "stretch") {
    for (size_t i = 0; i < n; ++i) {
      (*out)[axes[i]] = sizes[i];
      (*scale_out)[axes[i]] = static_cast<double>(sizes[i]) /
                              static_cast<double>(in[axes[i]]);
    }
    return absl::OkStatus();
  }
  if (policy != "not_larger" && policy != "not_smaller") {
    return Invalid(absl::StrCat("keep_aspect_ratio_policy '", policy,
                                "' is not stretch, not_larger or "
                                "not_smaller"));
  }
  double scale = policy == "not_larger" ? INFINITY : 0;
  for (size_t i = 0; i < n; ++i) {
    const double s = static_cast<double>(sizes[i]) /
                     static_cast<double>(in[axes[i]]);
    scale = policy == "not_larger" ? std::min(scale, s) : std::max(scale, s);
  }
  for (size_t i = 0; i < n; ++i) {
    auto d = CheckedDim(
        std::floor(scale * static_cast<double>(in[axes[i]]) + 0.5), "sizes");
    if (!d.ok()) return d.status();
    (*out)[axes[i]] = *d;
    (*scale_out)[axes[i]] = scale;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> FullPads(int rank,
                                              absl::Span<const int64_t> pads,
                                              absl::Span<const int64_t> axes) {
  std::vector<int64_t> full(2 * rank, 0);
  if (axes.empty()) {
    if (static_cast<int>(pads.size()) != 2 * rank) {
      return Invalid(absl::StrCat(pads.size(), " pads for an input of rank ",
                                  rank, " (need ", 2 * rank, ")"));
    }
    full.assign(pads.begin(), pads.end());
    return full;
  }
  const size_t n = axes.size();
  if (pads.size() != 2 * n) {
    return Invalid(
        absl::StrCat(pads.size(), " pads for ", n, " axes (need ", 2 * n, ")"));
  }
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < n; ++i) {
    int64_t a = axes[i];
    if (a < -rank || a >= rank) {
      return Invalid(absl::StrCat("axis ", a, " out of range for rank ", rank));
    }
    if (a < 0) a += rank;
    if (seen[a]) return Invalid(absl::StrCat("axis ", a, " repeated"));
    seen[a] = true;
    full[a] = pads[i];
    full[rank + a] = pads[n + i];
  }
  return full;
}

absl::StatusOr<int64_t> PoolOutputSize(int64_t in, int64_t kernel,
                                       int64_t stride, int64_t pad_begin,
                                       int64_t pad_end, int64_t dilation,
                                       bool ceil_mode) {
  if (stride < 1 || dilation < 1 || kernel < 1) {
    return Invalid("stride, dilation and kernel size must be >= 1");
  }
  if (pad_begin < 0 || pad_end < 0) return Invalid("pads must be >= 0");
  const int64_t window = dilation * (kernel - 1) + 1;
  const int64_t span = in + pad_begin + pad_end - window;
  if (span < 0) {
    return Invalid(absl::StrCat("window of ", window,
                                " is larger than the padded input ",
                                in + pad_begin + pad_end));
  }
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

absl::StatusOr<int64_t> ConvTransposeOutputSize(int64_t in, int64_t kernel,
                                                int64_t stride,
                                                int64_t pad_begin,
                                                int64_t pad_end,
                                                int64_t dilation,
                                                int64_t output_padding) {
  if (stride < 1 || dilation < 1 || kernel < 1) {
    return Invalid("stride, dilation and kernel size must be >= 1");
  }
  if (output_padding < 0) return Invalid("output_padding must be >= 0");
  const int64_t out = stride * (in - 1) + output_padding +
                      dilation * (kernel - 1) + 1 - pad_begin - pad_end;
  if (in < 1 || out < 0 || out > kMaxElements) {
    return Invalid(absl::StrCat("ConvTranspose output size ", out,
                                " for an input size of ", in));
  }
  return out;
}

absl::Status CheckWindowAttrs(size_t n, absl::Span<const int64_t> kernel,
                              absl::Span<const int64_t> strides,
                              absl::Span<const int64_t> pads,
                              absl::Span<const int64_t> dilations,
                              bool negative_pads_ok) {
  if (strides.size() != n || dilations.size() != n || pads.size() != 2 * n ||
      (!kernel.empty() && kernel.size() != n)) {
    return Invalid(absl::StrCat(
        "a ", n, "-D window needs ", n, " strides, dilations and kernel "
        "sizes and ", 2 * n, " pads; got strides [",
        absl::StrJoin(strides, ","), "], dilations [",
        absl::StrJoin(dilations, ","), "], pads [", absl::StrJoin(pads, ","),
        "], kernel_shape [", absl::StrJoin(kernel, ","), "]"));
  }
  for (size_t i = 0; i < n; ++i) {
    if (strides[i] < 1 || dilations[i] < 1 ||
        (!kernel.empty() && kernel[i] < 1)) {
      return Invalid("strides, dilations and kernel sizes must be >= 1");
    }
  }
  if (!negative_pads_ok) {
    for (int64_t p : pads) {
      if (p < 0) return Invalid("pads must be >= 0");
    }
  }
  return absl::OkStatus();
}

}  // namespace sluice
