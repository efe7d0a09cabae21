#include "kernels/vision_attrs.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/vision_shapes.h"

namespace sluice {

absl::StatusOr<ResizeAttrs> ParseResizeAttrs(const Node& node) {
  const AttrMap& m = node.attrs();
  ResizeAttrs a;
  ASSIGN_OR_RETURN(a.mode, m.GetString("mode"));
  ASSIGN_OR_RETURN(a.transform, m.GetString("coordinate_transformation_mode"));
  ASSIGN_OR_RETURN(a.nearest_mode, m.GetString("nearest_mode"));
  ASSIGN_OR_RETURN(a.policy, m.GetString("keep_aspect_ratio_policy"));
  ASSIGN_OR_RETURN(a.cubic_a, m.GetFloat("cubic_coeff_a"));
  ASSIGN_OR_RETURN(a.exclude_outside, m.GetBool("exclude_outside"));
  ASSIGN_OR_RETURN(a.antialias, m.GetBool("antialias"));
  ASSIGN_OR_RETURN(a.extrapolation, m.GetFloat("extrapolation_value"));
  ASSIGN_OR_RETURN(a.axes, m.GetIntList("axes"));
  if (a.mode != "nearest" && a.mode != "linear" && a.mode != "cubic") {
    return absl::InvalidArgumentError(
        absl::StrCat("mode '", a.mode, "' is not nearest, linear or cubic"));
  }
  const std::string& t = a.transform;
  if (t != "half_pixel" && t != "half_pixel_symmetric" &&
      t != "pytorch_half_pixel" && t != "align_corners" && t != "asymmetric" &&
      t != "tf_crop_and_resize") {
    return absl::InvalidArgumentError(absl::StrCat(
        "coordinate_transformation_mode '", t, "' is not supported"));
  }
  const std::string& n = a.nearest_mode;
  if (n != "round_prefer_floor" && n != "round_prefer_ceil" && n != "floor" &&
      n != "ceil") {
    return absl::InvalidArgumentError(
        absl::StrCat("nearest_mode '", n, "' is not supported"));
  }
  return a;
}

absl::Status ResizeRoi(const ResizeAttrs& a, int rank,
                       absl::Span<const float> roi,
                       std::vector<double>* roi_start,
                       std::vector<double>* roi_end) {
  roi_start->assign(rank, 0.0);
  roi_end->assign(rank, 1.0);
  if (a.transform != "tf_crop_and_resize") return absl::OkStatus();
  std::vector<int64_t> axes = a.axes;
  if (axes.empty()) {
    for (int i = 0; i < rank; ++i) axes.push_back(i);
  }
  const int64_t n = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(roi.size()) != 2 * n) {
    return absl::InvalidArgumentError(
        absl::StrCat("tf_crop_and_resize needs roi of ", 2 * n,
                     " values, got ", roi.size()));
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ax = axes[i] < 0 ? axes[i] + rank : axes[i];
    (*roi_start)[ax] = roi[i];
    (*roi_end)[ax] = roi[n + i];
  }
  return absl::OkStatus();
}

absl::StatusOr<PadMode> ParsePadMode(const Node& node) {
  ASSIGN_OR_RETURN(std::string mode, node.attrs().GetString("mode"));
  if (mode == "constant") return PadMode::kConstant;
  if (mode == "reflect") return PadMode::kReflect;
  if (mode == "edge") return PadMode::kEdge;
  if (mode == "wrap") return PadMode::kWrap;
  return absl::InvalidArgumentError(
      absl::StrCat("mode '", mode, "' is not constant, reflect, edge or wrap"));
}

absl::StatusOr<std::vector<PadAxis>> PadAxes(const Shape& in,
                                             absl::Span<const int64_t> full,
                                             PadMode mode) {
  const int rank = in.rank();
  std::vector<PadAxis> axes(rank);
  for (int d = 0; d < rank; ++d) {
    const int64_t b = full[d], e = full[rank + d];
    PadAxis& a = axes[d];
    // The cropped input: [max(0, -b), n - max(0, -e)).
    a.lo = b < 0 ? -b : 0;
    a.len = in.dim(d) - (e < 0 ? -e : 0) - a.lo;
    if (a.len < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("pads ", b, " and ", e, " crop more than dim ", d,
                       " of ", in.DebugString()));
    }
    a.begin = b > 0 ? b : 0;
    a.out = a.len + a.begin + (e > 0 ? e : 0);
    if (a.len == 0 && a.out > 0 && mode != PadMode::kConstant) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot pad an empty dim ", d, " in a mode other than constant"));
    }
  }
  return axes;
}

absl::StatusOr<PoolAttrs> ParsePoolAttrs(const Node& node) {
  const AttrMap& m = node.attrs();
  PoolAttrs a;
  ASSIGN_OR_RETURN(a.kernel, m.GetIntList("kernel_shape"));
  ASSIGN_OR_RETURN(a.strides, m.GetIntList("strides"));
  ASSIGN_OR_RETURN(a.pads, m.GetIntList("pads"));
  ASSIGN_OR_RETURN(a.dilations, m.GetIntList("dilations"));
  ASSIGN_OR_RETURN(a.ceil_mode, m.GetBool("ceil_mode"));
  RETURN_IF_ERROR(CheckWindowAttrs(a.kernel.size(), a.kernel, a.strides,
                                   a.pads, a.dilations));
  if (node.op() == "MaxPoolWithIndices") {
    a.indices = true;
    ASSIGN_OR_RETURN(a.storage_order, m.GetInt("storage_order"));
    return a;
  }
  ASSIGN_OR_RETURN(std::string mode, m.GetString("mode"));
  ASSIGN_OR_RETURN(a.include_pad, m.GetBool("count_include_pad"));
  ASSIGN_OR_RETURN(a.p, m.GetInt("p"));
  if (mode == "max") {
    a.mode = PoolMode::kMax;
  } else if (mode == "avg") {
    a.mode = PoolMode::kAvg;
  } else if (mode == "lp") {
    a.mode = PoolMode::kLp;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("mode '", mode, "' is not max, avg or lp"));
  }
  return a;
}

absl::StatusOr<GridSampleAttrs> ParseGridSampleAttrs(const Node& node) {
  const AttrMap& m = node.attrs();
  GridSampleAttrs a;
  ASSIGN_OR_RETURN(std::string mode, m.GetString("mode"));
  ASSIGN_OR_RETURN(std::string padding, m.GetString("padding_mode"));
  ASSIGN_OR_RETURN(a.align_corners, m.GetBool("align_corners"));
  if (mode == "linear" || mode == "bilinear") {
    a.interp = GridInterp::kLinear;
  } else if (mode == "nearest") {
    a.interp = GridInterp::kNearest;
  } else if (mode == "cubic" || mode == "bicubic") {
    a.interp = GridInterp::kCubic;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("mode '", mode, "' is not linear, nearest or cubic"));
  }
  if (padding == "zeros") {
    a.padding = GridPadding::kZeros;
  } else if (padding == "border") {
    a.padding = GridPadding::kBorder;
  } else if (padding == "reflection") {
    a.padding = GridPadding::kReflection;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "padding_mode '", padding, "' is not zeros, border or reflection"));
  }
  return a;
}

absl::StatusOr<ConvAttrs> ParseConvAttrs(const Node& node, bool transpose) {
  const AttrMap& m = node.attrs();
  ConvAttrs a;
  ASSIGN_OR_RETURN(a.strides, m.GetIntList("strides"));
  ASSIGN_OR_RETURN(a.pads, m.GetIntList("pads"));
  ASSIGN_OR_RETURN(a.dilations, m.GetIntList("dilations"));
  ASSIGN_OR_RETURN(a.group, m.GetInt("group"));
  const size_t n = a.strides.size();
  if (transpose) {
    ASSIGN_OR_RETURN(a.output_padding, m.GetIntList("output_padding"));
    if (a.output_padding.size() != n) {
      return absl::InvalidArgumentError(
          absl::StrCat("output_padding needs ", n, " entries"));
    }
  }
  RETURN_IF_ERROR(
      CheckWindowAttrs(n, {}, a.strides, a.pads, a.dilations, transpose));
  if (a.group < 1) return absl::InvalidArgumentError("group must be >= 1");
  return a;
}

}  // namespace sluice
