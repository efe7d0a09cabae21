#include "kernels/vision_params.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/runtime_params.h"
#include "graph/shape_fns.h"
#include "graph/vision_shapes.h"
#include "kernels/cpu/kernel_util.h"

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

absl::StatusOr<ResizePlan> PlanResize(const ResizeAttrs& a, const Tensor& x,
                                      const Tensor& roi, const Tensor& scales,
                                      const Tensor& sizes) {
  RETURN_IF_ERROR(cpu::CheckDtype(roi, DT_FLOAT, "roi"));
  RETURN_IF_ERROR(cpu::CheckDtype(scales, DT_FLOAT, "scales"));
  ASSIGN_OR_RETURN(std::vector<int64_t> size_v,
                   IntParamValues(sizes, "sizes"));
  std::vector<float> scale_v(scales.data<float>(),
                             scales.data<float>() + scales.NumElements());
  ResizePlan p;
  p.in_dims.assign(x.shape().dims().begin(), x.shape().dims().end());
  RETURN_IF_ERROR(ResizeDims(p.in_dims, scale_v, size_v, a.axes, a.policy,
                             &p.out_dims, &p.scale));
  RETURN_IF_ERROR(ResizeRoi(
      a, x.rank(), absl::MakeConstSpan(roi.data<float>(), roi.NumElements()),
      &p.roi_start, &p.roi_end));
  return p;
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

absl::StatusOr<std::vector<PadAxis>> PlanPad(const Tensor& x,
                                             const Tensor& pads,
                                             const Tensor& value,
                                             const Tensor& axes, PadMode mode) {
  RETURN_IF_ERROR(cpu::CheckDtype(value, x.dtype(), "value"));
  if (value.NumElements() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "value must be empty or one element, got ", value.NumElements()));
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> pad_v, IntParamValues(pads, "pads"));
  ASSIGN_OR_RETURN(std::vector<int64_t> axes_v, IntParamValues(axes, "axes"));
  ASSIGN_OR_RETURN(std::vector<int64_t> full,
                   FullPads(x.rank(), pad_v, axes_v));
  return PadAxes(x.shape(), full, mode);
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

absl::StatusOr<std::vector<int64_t>> GridSampleDims(const Tensor& x,
                                                    const Tensor& grid) {
  RETURN_IF_ERROR(cpu::CheckDtype(grid, x.dtype(), "grid"));
  const int r = x.rank() - 2;
  if (r < 1 || grid.rank() != r + 2 || grid.dim(r + 1) != r ||
      grid.dim(0) != x.dim(0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GridSample needs X [N,C,D1..Dr] and grid [N,D1'..Dr',r]; got ",
        x.shape().DebugString(), " and ", grid.shape().DebugString()));
  }
  for (int d = 0; d < r; ++d) {
    if (x.dim(2 + d) == 0) {
      return absl::InvalidArgumentError("GridSample input has an empty dim");
    }
  }
  std::vector<int64_t> dims = {x.dim(0), x.dim(1)};
  for (int d = 0; d < r; ++d) dims.push_back(grid.dim(1 + d));
  return dims;
}

absl::StatusOr<ConvAttrs> ParseConvAttrs(const Node& node) {
  const AttrMap& m = node.attrs();
  ConvAttrs a;
  const bool transpose = a.transpose = node.op() == "ConvTranspose";
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

namespace {

absl::Status CheckConvInputs(const Tensor& x, const Tensor& f,
                             const ConvAttrs& a, bool transpose) {
  // float32 on the CPU (its registration); the GPU kernels take every
  // floating dtype, with the filter of the input's.
  if (x.dtype() != DT_FLOAT && x.dtype() != DT_FLOAT16 &&
      x.dtype() != DT_BFLOAT16 && x.dtype() != DT_DOUBLE) {
    RETURN_IF_ERROR(cpu::CheckDtype(x, DT_FLOAT, "input"));
  }
  RETURN_IF_ERROR(cpu::CheckDtype(f, x.dtype(), "filter"));
  const int rank = static_cast<int>(a.strides.size()) + 2;
  RETURN_IF_ERROR(cpu::CheckRank(x, rank, "input"));
  RETURN_IF_ERROR(cpu::CheckRank(f, rank, "filter"));
  const int64_t g = a.group;
  const bool ok = transpose ? (f.dim(0) == x.dim(1) && x.dim(1) % g == 0)
                            : (x.dim(1) == f.dim(1) * g && f.dim(0) % g == 0);
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "channels do not match: input ", x.shape().DebugString(),
        ", filter ", f.shape().DebugString(), ", group ", g));
  }
  return absl::OkStatus();
}


absl::StatusOr<cpu::WindowNd> ConvWindow(const Tensor& x, const Tensor& f,
                                         const ConvAttrs& a, bool transpose,
                                         std::vector<int64_t>* out_dims) {
  const size_t n = a.strides.size();
  cpu::WindowNd g;
  g.channels = transpose ? f.dim(1) : x.dim(1) / a.group;
  g.strides = a.strides;
  g.dilations = a.dilations;
  g.pad_begin.assign(a.pads.begin(), a.pads.begin() + n);
  *out_dims = {x.dim(0), transpose ? f.dim(1) * a.group : f.dim(0)};
  for (size_t i = 0; i < n; ++i) {
    g.kernel.push_back(f.dim(2 + i));
    int64_t o = 0;
    if (transpose) {
      ASSIGN_OR_RETURN(o, ConvTransposeOutputSize(
                              x.dim(2 + i), f.dim(2 + i), a.strides[i],
                              a.pads[i], a.pads[n + i], a.dilations[i],
                              a.output_padding[i]));
      g.out.push_back(x.dim(2 + i));
      g.in.push_back(o);
    } else {
      ASSIGN_OR_RETURN(o, ConvOutputSize(x.dim(2 + i), f.dim(2 + i),
                                         a.strides[i], a.pads[i],
                                         a.pads[n + i], a.dilations[i]));
      g.in.push_back(x.dim(2 + i));
      g.out.push_back(o);
    }
    out_dims->push_back(o);
  }
  return g;
}

}  // namespace

absl::StatusOr<ConvPlan> PlanConv(const ConvAttrs& a, const Tensor& x, const Tensor& f) {
  RETURN_IF_ERROR(CheckConvInputs(x, f, a, a.transpose));
  ConvPlan p;
  ASSIGN_OR_RETURN(p.window, ConvWindow(x, f, a, a.transpose, &p.out_dims));
  return p;
}

absl::StatusOr<Col2ImAttrs> ParseCol2ImAttrs(const Node& node) {
  const AttrMap& m = node.attrs();
  Col2ImAttrs a;
  ASSIGN_OR_RETURN(a.strides, m.GetIntList("strides"));
  ASSIGN_OR_RETURN(a.pads, m.GetIntList("pads"));
  ASSIGN_OR_RETURN(a.dilations, m.GetIntList("dilations"));
  return a;
}

absl::StatusOr<cpu::WindowNd> Col2ImWindow(const Col2ImAttrs& a,
                                           const Tensor& x,
                                           const Tensor& image_shape,
                                           const Tensor& block_shape,
                                           std::vector<int64_t>* out_dims) {
  RETURN_IF_ERROR(cpu::CheckDtype(x, DT_FLOAT, "input"));
  RETURN_IF_ERROR(cpu::CheckRank(x, 3, "Col2Im input"));
  ASSIGN_OR_RETURN(std::vector<int64_t> image,
                   IntParamValues(image_shape, "image_shape"));
  ASSIGN_OR_RETURN(std::vector<int64_t> block,
                   IntParamValues(block_shape, "block_shape"));
  const size_t n = image.size();
  if (block.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "image_shape has ", n, " dims and block_shape ", block.size()));
  }
  cpu::WindowNd g;
  g.in = image;
  g.kernel = block;
  // assign() rather than `empty() ? vector(n, 1) : attr`: GCC 12 at -O3
  // reports a false -Wfree-nonheap-object on the conditional's temporary.
  g.strides = a.strides;
  if (g.strides.empty()) g.strides.assign(n, 1);
  g.dilations = a.dilations;
  if (g.dilations.empty()) g.dilations.assign(n, 1);
  std::vector<int64_t> pads = a.pads;
  if (pads.empty()) pads.assign(2 * n, 0);
  RETURN_IF_ERROR(CheckWindowAttrs(n, block, g.strides, pads, g.dilations));
  g.pad_begin.assign(pads.begin(), pads.begin() + n);
  for (size_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(int64_t o,
                     ConvOutputSize(image[i], block[i], g.strides[i], pads[i],
                                    pads[n + i], g.dilations[i]));
    g.out.push_back(o);
  }
  const int64_t k = g.KernelSize();
  if (x.dim(1) % k != 0 || x.dim(2) != g.OutSize()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Col2Im input ", x.shape().DebugString(), " does not match ", k,
        " block elements and ", g.OutSize(), " blocks"));
  }
  g.channels = x.dim(1) / k;
  *out_dims = {x.dim(0), g.channels};
  out_dims->insert(out_dims->end(), image.begin(), image.end());
  return g;
}

absl::StatusOr<AffineGridAttrs> ParseAffineGridAttrs(const Node& node) {
  AffineGridAttrs a;
  ASSIGN_OR_RETURN(a.align_corners, node.attrs().GetBool("align_corners"));
  return a;
}


absl::StatusOr<std::vector<int64_t>> AffineGridDims(
    const Tensor& theta, absl::Span<const int64_t> size) {
  const int64_t r = static_cast<int64_t>(size.size()) - 2;  // 2 or 3
  if ((r != 2 && r != 3) || theta.rank() != 3 || theta.dim(0) != size[0] ||
      theta.dim(1) != r || theta.dim(2) != r + 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AffineGrid needs size [N,C,H,W] or [N,C,D,H,W] and theta [N,2,3] "
        "or [N,3,4]; got ",
        size.size(), " sizes and theta ", theta.shape().DebugString()));
  }
  std::vector<int64_t> dims = {size[0]};
  for (int64_t d = 0; d < r; ++d) {
    if (size[2 + d] < 0) return absl::InvalidArgumentError("size < 0");
    dims.push_back(size[2 + d]);
  }
  dims.push_back(r);
  return dims;
}


absl::StatusOr<MaxUnpoolAttrs> ParseMaxUnpoolAttrs(const Node& node) {
  const AttrMap& m = node.attrs();
  MaxUnpoolAttrs a;
  ASSIGN_OR_RETURN(a.kernel, m.GetIntList("kernel_shape"));
  ASSIGN_OR_RETURN(a.strides, m.GetIntList("strides"));
  ASSIGN_OR_RETURN(a.pads, m.GetIntList("pads"));
  const size_t n = a.kernel.size();
  if (a.strides.size() != n || a.pads.size() != 2 * n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a ", n, "-D MaxUnpool needs ", n, " strides and ", 2 * n, " pads"));
  }
  return a;
}

absl::StatusOr<std::vector<int64_t>> MaxUnpoolDims(
    const MaxUnpoolAttrs& a, const Tensor& x, const Tensor& indices,
    const std::vector<int64_t>& output_shape) {
  const size_t n = a.kernel.size();
  RETURN_IF_ERROR(
      cpu::CheckRank(x, static_cast<int>(n) + 2, "MaxUnpool input"));
  if (indices.shape() != x.shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat("indices ", indices.shape().DebugString(),
                     " must have the input's shape ", x.shape().DebugString()));
  }
  std::vector<int64_t> dims = {x.dim(0), x.dim(1)};
  for (size_t i = 0; i < n; ++i) {
    dims.push_back((x.dim(2 + i) - 1) * a.strides[i] + a.kernel[i] -
                   a.pads[i] - a.pads[n + i]);
  }
  if (!output_shape.empty()) {
    if (output_shape.size() != n + 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output_shape needs ", n + 2, " dims, got ", output_shape.size()));
    }
    dims = output_shape;
  }
  for (int64_t d : dims) {
    if (d < 0) return absl::InvalidArgumentError("negative output size");
  }
  return dims;
}

absl::StatusOr<std::vector<int64_t>> PlanMaxUnpool(const MaxUnpoolAttrs& a,
                                                   const Tensor& x,
                                                   const Tensor& indices,
                                                   const Tensor& output_shape) {
  RETURN_IF_ERROR(cpu::CheckDtype(indices, DT_INT64, "indices"));
  ASSIGN_OR_RETURN(std::vector<int64_t> out_shape,
                   IntParamValues(output_shape, "output_shape"));
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, MaxUnpoolDims(a, x, indices, out_shape));
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  RETURN_IF_ERROR(CheckUnpoolIndices(indices, total));
  return dims;
}

absl::Status CheckUnpoolIndices(const Tensor& indices, int64_t total) {
  const int64_t* where = indices.data<int64_t>();
  for (int64_t i = 0; i < indices.NumElements(); ++i) {
    if (where[i] < 0 || where[i] >= total) {
      return absl::InvalidArgumentError(absl::StrCat(
          "index ", where[i], " outside the output of ", total, " elements"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<RoiAlignAttrs> ParseRoiAlignAttrs(const Node& node) {
  const AttrMap& m = node.attrs();
  RoiAlignAttrs a;
  ASSIGN_OR_RETURN(std::string mode, m.GetString("mode"));
  ASSIGN_OR_RETURN(std::string ct,
                   m.GetString("coordinate_transformation_mode"));
  ASSIGN_OR_RETURN(a.out_h, m.GetInt("output_height"));
  ASSIGN_OR_RETURN(a.out_w, m.GetInt("output_width"));
  ASSIGN_OR_RETURN(a.sampling_ratio, m.GetInt("sampling_ratio"));
  ASSIGN_OR_RETURN(a.spatial_scale, m.GetFloat("spatial_scale"));
  if (mode != "avg" && mode != "max") {
    return absl::InvalidArgumentError(
        absl::StrCat("mode '", mode, "' is not avg or max"));
  }
  if (ct != "half_pixel" && ct != "output_half_pixel") {
    return absl::InvalidArgumentError(
        absl::StrCat("coordinate_transformation_mode '", ct,
                     "' is not half_pixel or output_half_pixel"));
  }
  if (a.out_h < 1 || a.out_w < 1 || a.sampling_ratio < 0) {
    return absl::InvalidArgumentError(
        "output_height and output_width must be >= 1, sampling_ratio >= 0");
  }
  a.max = mode == "max";
  a.half_pixel = ct == "half_pixel";
  return a;
}

absl::Status CheckRoiAlignInputs(const Tensor& x, const Tensor& rois,
                                 absl::Span<const int64_t> batch) {
  RETURN_IF_ERROR(cpu::CheckRank(x, 4, "RoiAlign input"));
  RETURN_IF_ERROR(cpu::CheckDtype(rois, x.dtype(), "rois"));
  if (rois.rank() != 2 || rois.dim(1) != 4 ||
      static_cast<int64_t>(batch.size()) != rois.dim(0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RoiAlign needs rois [R,4] and batch_indices [R]; got ",
        rois.shape().DebugString(), " and ", batch.size(), " indices"));
  }
  for (int64_t b : batch) {
    if (b < 0 || b >= x.dim(0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "batch index ", b, " out of range [0, ", x.dim(0), ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<NmsAttrs> ParseNmsAttrs(const Node& node) {
  NmsAttrs a;
  ASSIGN_OR_RETURN(int64_t c, node.attrs().GetInt("center_point_box"));
  if (c != 0 && c != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("center_point_box must be 0 or 1, got ", c));
  }
  a.center = c == 1;
  return a;
}

absl::StatusOr<NmsPlan> PlanNms(const Tensor& boxes, const Tensor& scores,
                                const Tensor& max_per_class,
                                const Tensor& iou_threshold,
                                const Tensor& score_threshold) {
  if (boxes.rank() != 3 || boxes.shape().dim(2) != 4 || scores.rank() != 3 ||
      scores.shape().dim(0) != boxes.shape().dim(0) ||
      scores.shape().dim(2) != boxes.shape().dim(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NonMaxSuppression needs boxes [B, N, 4] and scores [B, C, N], got ",
        boxes.shape().DebugString(), " and ", scores.shape().DebugString()));
  }
  NmsPlan p;
  p.batches = boxes.shape().dim(0);
  p.classes = scores.shape().dim(1);
  p.boxes = boxes.shape().dim(1);
  p.max_per_class = max_per_class.NumElements() > 0
                        ? std::max<int64_t>(max_per_class.data<int64_t>()[0], 0)
                        : 0;
  p.iou_threshold =
      iou_threshold.NumElements() > 0 ? iou_threshold.data<float>()[0] : 0.0f;
  p.thresholded = score_threshold.NumElements() > 0;
  p.score_threshold = p.thresholded ? score_threshold.data<float>()[0] : 0.0f;
  return p;
}

}  // namespace sluice
