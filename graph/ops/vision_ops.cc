// Schemas of the N-d vision ops (docs/ops.md, "Vision"): Resize, Pad,
// GridSample, ConvND, ConvTranspose, PoolND, MaxPoolWithIndices and Col2Im.
// Parameters that ONNX passes as inputs (Resize's roi, scales and sizes;
// Pad's pads, value and axes; Col2Im's image and block shapes) are inputs
// here too: the shape functions use their values when known at load time
// and leave the dims they decide unknown otherwise.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/op_registry.h"
#include "graph/runtime_params.h"
#include "graph/shape_fns.h"
#include "graph/vision_shapes.h"

namespace sluice {
namespace {

bool FullyKnown(const Shape& s) { return s.IsFullyDefined(); }

absl::StatusOr<std::optional<std::vector<int64_t>>> KnownInts(
    InferenceContext& c, int i, absl::string_view what) {
  const Tensor* v = c.input_value(i);
  if (v == nullptr) return std::nullopt;
  ASSIGN_OR_RETURN(std::vector<int64_t> values, IntParamValues(*v, what));
  return values;
}

absl::Status ResizeFn(InferenceContext& c) {
  const Shape& x = c.input_shape(0);
  if (x.unknown_rank()) {
    c.set_output_shape(0, Shape::UnknownRank());
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, c.attrs().GetIntList("axes"));
  ASSIGN_OR_RETURN(std::string policy,
                   c.attrs().GetString("keep_aspect_ratio_policy"));
  const Tensor* scales = c.input_value(2);
  const Tensor* sizes = c.input_value(3);
  if (FullyKnown(x) && scales != nullptr && sizes != nullptr &&
      scales->dtype() == DT_FLOAT) {
    ASSIGN_OR_RETURN(std::vector<int64_t> size_values,
                     IntParamValues(*sizes, "sizes"));
    std::vector<float> scale_values(scales->data<float>(),
                                    scales->data<float>() +
                                        scales->NumElements());
    std::vector<int64_t> out;
    std::vector<double> unused;
    RETURN_IF_ERROR(ResizeDims(x.dims(), scale_values, size_values, axes,
                               policy, &out, &unused));
    c.set_output_shape(0, Shape(out));
    return absl::OkStatus();
  }
  // Dims outside `axes` keep their size.
  std::vector<int64_t> dims(x.dims().begin(), x.dims().end());
  const int rank = x.rank();
  if (axes.empty()) {
    dims.assign(rank, kUnknownDim);
  } else {
    for (int64_t a : axes) {
      if (a < -rank || a >= rank) {
        return absl::InvalidArgumentError(
            absl::StrCat("axis ", a, " out of range for rank ", rank));
      }
      dims[a < 0 ? a + rank : a] = kUnknownDim;
    }
  }
  c.set_output_shape(0, Shape(dims));
  return absl::OkStatus();
}

absl::Status PadFn(InferenceContext& c) {
  const Shape& x = c.input_shape(0);
  if (x.unknown_rank()) {
    c.set_output_shape(0, Shape::UnknownRank());
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(auto pads, KnownInts(c, 1, "pads"));
  ASSIGN_OR_RETURN(auto axes, KnownInts(c, 3, "axes"));
  if (!pads || !axes) {
    c.set_output_shape(0, UnknownDims(x.rank()));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> full,
                   FullPads(x.rank(), *pads, *axes));
  std::vector<int64_t> dims(x.rank());
  for (int i = 0; i < x.rank(); ++i) {
    const int64_t d = x.dim(i);
    dims[i] = d < 0 ? kUnknownDim : d + full[i] + full[x.rank() + i];
    if (d >= 0 && dims[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pads ", full[i], " and ", full[x.rank() + i],
          " crop more than dim ", i, " of ", x.DebugString()));
    }
  }
  c.set_output_shape(0, Shape(dims));
  return absl::OkStatus();
}

absl::Status GridSampleFn(InferenceContext& c) {
  const Shape& x = c.input_shape(0);
  const Shape& grid = c.input_shape(1);
  if (x.unknown_rank() || grid.unknown_rank()) {
    c.set_output_shape(0, Shape::UnknownRank());
    return absl::OkStatus();
  }
  if (x.rank() < 3 || grid.rank() != x.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GridSample needs X [N,C,D1..Dr] and grid [N,D1'..Dr',r]; got ",
        x.DebugString(), " and ", grid.DebugString()));
  }
  std::vector<int64_t> dims = {x.dim(0), x.dim(1)};
  for (int i = 1; i + 1 < grid.rank(); ++i) dims.push_back(grid.dim(i));
  c.set_output_shape(0, Shape(dims));
  return absl::OkStatus();
}

struct WindowAttrs {
  std::vector<int64_t> kernel, strides, pads, dilations;
};

absl::StatusOr<WindowAttrs> ReadWindow(const AttrMap& attrs, bool kernel) {
  WindowAttrs w;
  if (kernel) {
    ASSIGN_OR_RETURN(w.kernel, attrs.GetIntList("kernel_shape"));
  }
  ASSIGN_OR_RETURN(w.strides, attrs.GetIntList("strides"));
  ASSIGN_OR_RETURN(w.pads, attrs.GetIntList("pads"));
  ASSIGN_OR_RETURN(w.dilations, attrs.GetIntList("dilations"));
  return w;
}

// ConvND and ConvTranspose: x [N, C, spatial...], filter [O, C/g, k...]
// (ConvND) or [C, O/g, k...] (ConvTranspose).
absl::Status ConvFn(InferenceContext& c, bool transpose) {
  ASSIGN_OR_RETURN(WindowAttrs w, ReadWindow(c.attrs(), false));
  ASSIGN_OR_RETURN(int64_t group, c.attrs().GetInt("group"));
  std::vector<int64_t> output_padding;
  if (transpose) {
    ASSIGN_OR_RETURN(output_padding, c.attrs().GetIntList("output_padding"));
  }
  const size_t n = w.strides.size();
  RETURN_IF_ERROR(CheckWindowAttrs(n, {}, w.strides, w.pads, w.dilations,
                                   /*negative_pads_ok=*/transpose));
  if (group < 1) return absl::InvalidArgumentError("group must be >= 1");
  if (transpose && output_padding.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("output_padding needs ", n, " entries"));
  }
  const Shape& x = c.input_shape(0);
  const Shape& f = c.input_shape(1);
  for (const Shape* s : {&x, &f}) {
    if (!s->unknown_rank() && s->rank() != static_cast<int>(n) + 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a ", n, "-D convolution needs inputs of rank ", n + 2, ", got ",
          s->DebugString()));
    }
  }
  std::vector<int64_t> dims(n + 2, kUnknownDim);
  if (!x.unknown_rank()) dims[0] = x.dim(0);
  if (!f.unknown_rank()) {
    dims[1] = transpose ? (f.dim(1) < 0 ? kUnknownDim : f.dim(1) * group)
                        : f.dim(0);
  }
  if (!x.unknown_rank() && !f.unknown_rank()) {
    for (size_t i = 0; i < n; ++i) {
      const int64_t in = x.dim(2 + i), k = f.dim(2 + i);
      if (in < 0 || k < 0) continue;
      if (transpose) {
        ASSIGN_OR_RETURN(dims[2 + i],
                         ConvTransposeOutputSize(in, k, w.strides[i],
                                                 w.pads[i], w.pads[n + i],
                                                 w.dilations[i],
                                                 output_padding[i]));
      } else {
        ASSIGN_OR_RETURN(dims[2 + i],
                         ConvOutputSize(in, k, w.strides[i], w.pads[i],
                                        w.pads[n + i], w.dilations[i]));
      }
    }
  }
  c.set_output_shape(0, Shape(dims));
  return absl::OkStatus();
}

absl::Status PoolNdFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(WindowAttrs w, ReadWindow(c.attrs(), true));
  ASSIGN_OR_RETURN(bool ceil_mode, c.attrs().GetBool("ceil_mode"));
  const size_t n = w.kernel.size();
  RETURN_IF_ERROR(CheckWindowAttrs(n, w.kernel, w.strides, w.pads,
                                   w.dilations));
  const Shape& x = c.input_shape(0);
  std::vector<int64_t> dims(n + 2, kUnknownDim);
  if (!x.unknown_rank()) {
    if (x.rank() != static_cast<int>(n) + 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a ", n, "-D pool needs an input of rank ", n + 2, ", got ",
          x.DebugString()));
    }
    dims[0] = x.dim(0);
    dims[1] = x.dim(1);
    for (size_t i = 0; i < n; ++i) {
      if (x.dim(2 + i) < 0) continue;
      ASSIGN_OR_RETURN(dims[2 + i],
                       PoolOutputSize(x.dim(2 + i), w.kernel[i], w.strides[i],
                                      w.pads[i], w.pads[n + i],
                                      w.dilations[i], ceil_mode));
    }
  }
  for (int o = 0; o < c.num_outputs(); ++o) c.set_output_shape(o, Shape(dims));
  return absl::OkStatus();
}

absl::Status Col2ImFn(InferenceContext& c) {
  const Shape& x = c.input_shape(0);
  ASSIGN_OR_RETURN(auto image, KnownInts(c, 1, "image_shape"));
  ASSIGN_OR_RETURN(auto block, KnownInts(c, 2, "block_shape"));
  int64_t n = -1;
  if (image) n = static_cast<int64_t>(image->size());
  const Shape& is = c.input_shape(1);
  if (n < 0 && !is.unknown_rank() && is.rank() == 1) n = is.dim(0);
  if (n < 0) {
    c.set_output_shape(0, Shape::UnknownRank());
    return absl::OkStatus();
  }
  std::vector<int64_t> dims(n + 2, kUnknownDim);
  if (!x.unknown_rank() && x.rank() == 3) {
    dims[0] = x.dim(0);
    if (block && x.dim(1) >= 0) {
      int64_t prod = 1;
      for (int64_t b : *block) prod *= b;
      if (prod > 0) dims[1] = x.dim(1) / prod;
    }
  }
  if (image) {
    for (int64_t i = 0; i < n; ++i) dims[2 + i] = (*image)[i];
  }
  c.set_output_shape(0, Shape(dims));
  return absl::OkStatus();
}

absl::Status AffineGridFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(auto size, KnownInts(c, 1, "size"));
  const Shape& ss = c.input_shape(1);
  int64_t n = size ? static_cast<int64_t>(size->size())
                   : (!ss.unknown_rank() && ss.rank() == 1 ? ss.dim(0) : -1);
  if (n < 0) {
    c.set_output_shape(0, Shape::UnknownRank());
    return absl::OkStatus();
  }
  if (n != 4 && n != 5) {
    return absl::InvalidArgumentError(
        absl::StrCat("AffineGrid size needs 4 or 5 values, got ", n));
  }
  std::vector<int64_t> dims(n - 1, kUnknownDim);
  if (size) {
    dims[0] = (*size)[0];
    for (int64_t i = 2; i < n; ++i) dims[i - 1] = (*size)[i];
  }
  dims.push_back(n - 2);
  c.set_output_shape(0, Shape(dims));
  return absl::OkStatus();
}

absl::Status RoiAlignFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t h, c.attrs().GetInt("output_height"));
  ASSIGN_OR_RETURN(int64_t w, c.attrs().GetInt("output_width"));
  const Shape& x = c.input_shape(0);
  const Shape& rois = c.input_shape(1);
  const Shape& batch = c.input_shape(2);
  // R, the number of boxes, is often known only at run time (the boxes a
  // detector keeps); what is certain now is checked now, as the kernel
  // checks the rest (kernels/vision_params.h).
  if (!x.unknown_rank() && x.rank() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RoiAlign input must be [N,C,H,W], got ", x.DebugString()));
  }
  if ((!rois.unknown_rank() &&
       (rois.rank() != 2 || (rois.dim(1) >= 0 && rois.dim(1) != 4))) ||
      (!batch.unknown_rank() && batch.rank() != 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RoiAlign needs rois [R,4] and batch_indices [R]; got ",
        rois.DebugString(), " and ", batch.DebugString()));
  }
  int64_t r = rois.unknown_rank() ? kUnknownDim : rois.dim(0);
  const int64_t rb = batch.unknown_rank() ? kUnknownDim : batch.dim(0);
  if (r >= 0 && rb >= 0 && r != rb) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RoiAlign has ", r, " rois but ", rb, " batch_indices"));
  }
  if (r < 0) r = rb;
  c.set_output_shape(
      0, Shape({r, x.unknown_rank() ? kUnknownDim : x.dim(1), h, w}));
  return absl::OkStatus();
}

absl::Status MaxUnpoolFn(InferenceContext& c) {
  const Shape& x = c.input_shape(0);
  c.set_output_shape(0, UnknownDims(x.unknown_rank() ? -1 : x.rank()));
  return absl::OkStatus();
}

OpDefBuilder WindowOp(const std::string& name, bool kernel) {
  OpDefBuilder b(name);
  if (kernel) b.Attr("kernel_shape", AttrType::kListInt);
  b.Attr("strides", AttrType::kListInt)
      .Attr("pads", AttrType::kListInt)
      .Attr("dilations", AttrType::kListInt);
  return b;
}

OpDefBuilder PoolOp(const std::string& name) {
  OpDefBuilder b = WindowOp(name, true);
  b.Input("input", "T")
      .Output("output", "T")
      .TypeAttr("T", kNumericTypes)
      .Attr("ceil_mode", AttrType::kBool, MakeBoolAttr(false))
      .ShapeFn(PoolNdFn);
  return b;
}

}  // namespace

void RegisterVisionOps(OpRegistry* r) {
  RegisterOrDie(
      r, OpDefBuilder("Resize")
             .Input("input", "T")
             .Input("roi", "float")
             .Input("scales", "float")
             .Input("sizes", "int64")
             .Output("output", "T")
             .TypeAttr("T", kNumericTypes)
             .Attr("mode", AttrType::kString, MakeStringAttr("nearest"))
             .Attr("coordinate_transformation_mode", AttrType::kString,
                   MakeStringAttr("half_pixel"))
             .Attr("nearest_mode", AttrType::kString,
                   MakeStringAttr("round_prefer_floor"))
             .Attr("cubic_coeff_a", AttrType::kFloat, MakeFloatAttr(-0.75f))
             .Attr("exclude_outside", AttrType::kBool, MakeBoolAttr(false))
             .Attr("extrapolation_value", AttrType::kFloat, MakeFloatAttr(0))
             .Attr("antialias", AttrType::kBool, MakeBoolAttr(false))
             .Attr("axes", AttrType::kListInt, MakeIntListAttr({}))
             .Attr("keep_aspect_ratio_policy", AttrType::kString,
                   MakeStringAttr("stretch"))
             .ShapeFn(ResizeFn)
             .Doc("ONNX Resize (opset 19): nearest, linear or cubic over the "
                  "given axes; roi, scales and sizes are runtime inputs, "
                  "empty when absent (exactly one of scales and sizes).")
             .Build());
  RegisterOrDie(r, OpDefBuilder("Pad")
                       .Input("input", "T")
                       .Input("pads", "int64")
                       .Input("value", "T")
                       .Input("axes", "int64")
                       .Output("output", "T")
                       .TypeAttr("T", kAllTypes)
                       .Attr("mode", AttrType::kString,
                             MakeStringAttr("constant"))
                       .ShapeFn(PadFn)
                       .Doc("ONNX Pad: constant, reflect, edge or wrap; pads "
                            "[begins..., ends...] of `axes` (empty: all), "
                            "negative pads crop; value: empty or one element "
                            "(0 when empty).")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("GridSample")
                       .Input("input", "T")
                       .Input("grid", "T")
                       .Output("output", "T")
                       .TypeAttr("T", kFloatTypes)
                       .Attr("mode", AttrType::kString,
                             MakeStringAttr("linear"))
                       .Attr("padding_mode", AttrType::kString,
                             MakeStringAttr("zeros"))
                       .Attr("align_corners", AttrType::kBool,
                             MakeBoolAttr(false))
                       .ShapeFn(GridSampleFn)
                       .Doc("ONNX GridSample (opset 20), N-d: linear, nearest "
                            "or cubic; zeros, border or reflection padding.")
                       .Build());
  RegisterOrDie(r, WindowOp("ConvND", false)
                       .Input("input", "T")
                       .Input("filter", "T")
                       .Output("output", "T")
                       .TypeAttr("T", kFloatTypes)
                       .Attr("group", AttrType::kInt, MakeIntAttr(1))
                       .ShapeFn([](InferenceContext& c) {
                         return ConvFn(c, false);
                       })
                       .Doc("N-d convolution, [N,C,spatial...]; filter "
                            "[O, C/group, k...]; pads [begins..., ends...].")
                       .Build());
  RegisterOrDie(r, WindowOp("DeformConv", false)
                       .Input("input", "T")
                       .Input("filter", "T")
                       .Input("offset", "T")
                       .Input("bias", "T")
                       .Input("mask", "T")
                       .Output("output", "T")
                       .TypeAttr("T", {DT_FLOAT, DT_DOUBLE})
                       .Attr("group", AttrType::kInt, MakeIntAttr(1))
                       .Attr("offset_group", AttrType::kInt, MakeIntAttr(1))
                       .ShapeFn([](InferenceContext& c) {
                         return ConvFn(c, false);
                       })
                       .Doc("2-D deformable convolution (ONNX DeformConv): "
                            "filter [O, C/group, kH, kW]; offset [N, "
                            "offset_group*2*kH*kW, oH, oW] moves each tap "
                            "(dy, dx; bilinear, 0 outside); mask [N, "
                            "offset_group*kH*kW, oH, oW] (or one value) "
                            "scales it; bias [O].")
                       .Build());
  RegisterOrDie(r, WindowOp("ConvTranspose", false)
                       .Input("input", "T")
                       .Input("filter", "T")
                       .Output("output", "T")
                       .TypeAttr("T", kFloatTypes)
                       .Attr("group", AttrType::kInt, MakeIntAttr(1))
                       .Attr("output_padding", AttrType::kListInt)
                       .ShapeFn([](InferenceContext& c) {
                         return ConvFn(c, true);
                       })
                       .Doc("N-d transposed convolution; filter "
                            "[C, O/group, k...]; pads may be negative.")
                       .Build());
  RegisterOrDie(r, PoolOp("PoolND")
                       .Attr("mode", AttrType::kString)
                       .Attr("count_include_pad", AttrType::kBool,
                             MakeBoolAttr(false))
                       .Attr("p", AttrType::kInt, MakeIntAttr(2))
                       .Doc("N-d pooling, mode max, avg or lp, with dilations "
                            "and ceil_mode; pads [begins..., ends...].")
                       .Build());
  RegisterOrDie(r, PoolOp("MaxPoolWithIndices")
                       .Output("indices", "int64")
                       .Attr("storage_order", AttrType::kInt, MakeIntAttr(0))
                       .Doc("N-d max pooling that also returns each maximum's "
                            "flat index into the input (ONNX MaxPool's "
                            "Indices).")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("Col2Im")
                       .Input("input", "T")
                       .Input("image_shape", "int64")
                       .Input("block_shape", "int64")
                       .Output("output", "T")
                       .TypeAttr("T", kFloatTypes)
                       .Attr("strides", AttrType::kListInt,
                             MakeIntListAttr({}))
                       .Attr("pads", AttrType::kListInt, MakeIntListAttr({}))
                       .Attr("dilations", AttrType::kListInt,
                             MakeIntListAttr({}))
                       .ShapeFn(Col2ImFn)
                       .Doc("ONNX Col2Im: [N, C*prod(block), L] summed into "
                            "[N, C, image...].")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("AffineGrid")
                       .Input("theta", "T")
                       .Input("size", "int64")
                       .Output("grid", "T")
                       .TypeAttr("T", kFloatTypes)
                       .Attr("align_corners", AttrType::kBool,
                             MakeBoolAttr(false))
                       .ShapeFn(AffineGridFn)
                       .Doc("ONNX AffineGrid: theta [N,2,3] or [N,3,4], size "
                            "[N,C,H,W] or [N,C,D,H,W] -> grid [N,H,W,2] or "
                            "[N,D,H,W,3].")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("MaxUnpool")
                       .Input("input", "T")
                       .Input("indices", "int64")
                       .Input("output_shape", "int64")
                       .Output("output", "T")
                       .TypeAttr("T", kAllTypes)
                       .Attr("kernel_shape", AttrType::kListInt)
                       .Attr("strides", AttrType::kListInt)
                       .Attr("pads", AttrType::kListInt)
                       .ShapeFn(MaxUnpoolFn)
                       .Doc("ONNX MaxUnpool: zeros with input[i] at flat "
                            "offset indices[i]; output_shape empty: the "
                            "pool's input size.")
                       .Build());
  RegisterOrDie(r, OpDefBuilder("RoiAlign")
                       .Input("input", "T")
                       .Input("rois", "T")
                       .Input("batch_indices", "int64")
                       .Output("output", "T")
                       .TypeAttr("T", kFloatTypes)
                       .Attr("mode", AttrType::kString, MakeStringAttr("avg"))
                       .Attr("coordinate_transformation_mode",
                             AttrType::kString, MakeStringAttr("half_pixel"))
                       .Attr("output_height", AttrType::kInt, MakeIntAttr(1))
                       .Attr("output_width", AttrType::kInt, MakeIntAttr(1))
                       .Attr("sampling_ratio", AttrType::kInt, MakeIntAttr(0))
                       .Attr("spatial_scale", AttrType::kFloat,
                             MakeFloatAttr(1.0f))
                       .ShapeFn(RoiAlignFn)
                       .Doc("ONNX RoiAlign: [R, C, output_height, "
                            "output_width], avg or max of bilinear samples.")
                       .Build());
}

}  // namespace sluice
