// ONNX vision ops -> sluice's N-d ops (graph/ops/vision_ops.cc): Resize,
// Pad, CenterCropPad, GridSample, ConvTranspose, DeformConv, Col2Im, LpPool,
// GlobalLpPool, and the 1-D / 3-D / dilated / uint8 / Indices forms of Conv,
// MaxPool and AveragePool that the 2-D handlers of ops_nn.cc (Conv2D,
// MaxPool, AvgPool, which have GPU kernels) do not take. Parameters ONNX
// passes as inputs stay inputs; absent optional ones become empty constants.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "onnx/import_context.h"

namespace sluice {
namespace {

ValuePtr Empty(ImportContext& ctx, const onnx::NodeProto& node, DataType dt) {
  Tensor t = *Tensor::Zeros(dt, Shape({0}));
  return ctx.em().AddConstant(std::move(t), ctx.Hint(node, "empty"));
}

ValuePtr Int64s(ImportContext& ctx, const std::vector<int64_t>& v,
                absl::string_view hint) {
  return ctx.em().AddConstant(
      Tensor::FromVector<int64_t>(v, Shape({static_cast<int64_t>(v.size())})),
      hint);
}

// Optional input `i` as `dtype` (cast when needed), or an empty constant.
absl::StatusOr<ValuePtr> ParamOr(ImportContext& ctx,
                                 const onnx::NodeProto& node, int i,
                                 DataType dtype) {
  ASSIGN_OR_RETURN(ValuePtr v, ctx.OptionalInput(node, i));
  if (v == nullptr) return Empty(ctx, node, dtype);
  return EmitCastTo(ctx, ctx.Hint(node, absl::StrCat("param", i)), v, dtype);
}

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// --- Resize, Pad, CenterCropPad, GridSample ---------------------------------

absl::Status ConvertResize(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr roi, ParamOr(ctx, node, 1, DT_FLOAT));
  ASSIGN_OR_RETURN(ValuePtr scales, ParamOr(ctx, node, 2, DT_FLOAT));
  ASSIGN_OR_RETURN(ValuePtr sizes, ParamOr(ctx, node, 3, DT_INT64));
  AttrList attrs = {
      {"mode", MakeStringAttr(AttrString(node, "mode", "nearest"))},
      {"coordinate_transformation_mode",
       MakeStringAttr(AttrString(node, "coordinate_transformation_mode",
                                 "half_pixel"))},
      {"nearest_mode",
       MakeStringAttr(AttrString(node, "nearest_mode", "round_prefer_floor"))},
      {"cubic_coeff_a", MakeFloatAttr(AttrFloat(node, "cubic_coeff_a", -0.75f))},
      {"exclude_outside",
       MakeBoolAttr(AttrInt(node, "exclude_outside", 0) != 0)},
      {"extrapolation_value",
       MakeFloatAttr(AttrFloat(node, "extrapolation_value", 0.0f))},
      {"antialias", MakeBoolAttr(AttrInt(node, "antialias", 0) != 0)},
      {"axes", MakeIntListAttr(
                   AttrInts(node, "axes").value_or(std::vector<int64_t>{}))},
      {"keep_aspect_ratio_policy",
       MakeStringAttr(AttrString(node, "keep_aspect_ratio_policy", "stretch"))},
  };
  ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1("Resize", ctx.Hint(node),
                                              {x, roi, scales, sizes}, attrs));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertPad(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ValuePtr pads, value, axes;
  if (ctx.opset() < 11) {  // pads and value as attributes
    std::optional<std::vector<int64_t>> p = AttrInts(node, "pads");
    if (!p) return Bad(node, "needs pads");
    pads = Int64s(ctx, *p, ctx.Hint(node, "pads"));
    value = ctx.em().AddConstant(
        ScalarTensor(x->dtype, AttrFloat(node, "value", 0.0f)),
        ctx.Hint(node, "value"));
    axes = Empty(ctx, node, DT_INT64);
  } else {
    ASSIGN_OR_RETURN(pads, ctx.Input(node, 1));
    ASSIGN_OR_RETURN(pads, EmitCastTo(ctx, ctx.Hint(node, "pads"), pads,
                                      DT_INT64));
    ASSIGN_OR_RETURN(value, ParamOr(ctx, node, 2, x->dtype));
    ASSIGN_OR_RETURN(axes, ParamOr(ctx, node, 3, DT_INT64));
  }
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("Pad", ctx.Hint(node), {x, pads, value, axes},
                     {{"mode", MakeStringAttr(
                                   AttrString(node, "mode", "constant"))}}));
  return ctx.SetOutput(node, 0, y);
}

// CenterCropPad is Pad with begin = trunc((target - dim) / 2) on each axis
// (negative: a crop) and end = target - dim - begin.
absl::Status ConvertCenterCropPad(const onnx::NodeProto& node,
                                  ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr shape, ctx.Input(node, 1));
  if (x->shape.unknown_rank()) return Bad(node, "needs the input's rank");
  const int rank = x->shape.rank();
  std::vector<int64_t> axes = AttrInts(node, "axes").value_or(
      std::vector<int64_t>{});
  if (axes.empty()) {
    for (int i = 0; i < rank; ++i) axes.push_back(i);
  }
  std::vector<int64_t> dims;
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return Bad(node, "axis out of range");
    if (a < 0) a += rank;
    if (x->shape.dim(a) < 0) {
      return Bad(node, "needs the input's dims on the axes known at import");
    }
    dims.push_back(x->shape.dim(a));
  }
  ValuePtr pads;
  GraphEmitter& em = ctx.em();
  if (shape->constant) {
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> target,
                     ctx.ConstInts(node, 1, "shape"));
    if (target->size() != axes.size()) {
      return Bad(node, "shape needs one size per axis");
    }
    std::vector<int64_t> p(2 * axes.size());
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t diff = (*target)[i] - dims[i];
      p[i] = diff / 2;  // truncating
      p[axes.size() + i] = diff - p[i];
    }
    pads = Int64s(ctx, p, ctx.Hint(node, "pads"));
  } else {
    // diff = target - dims; begin = (diff - (diff < 0 ? -(-diff % 2) : ...))
    // computed as diff - end with end = diff - trunc(diff / 2): Div of
    // int64 truncates in sluice as in C++.
    ASSIGN_OR_RETURN(shape, EmitCastTo(ctx, ctx.Hint(node, "shape64"), shape,
                                       DT_INT64));
    ASSIGN_OR_RETURN(ValuePtr diff,
                     em.Emit1("Sub", ctx.Hint(node, "diff"),
                              {shape, Int64s(ctx, dims, ctx.Hint(node, "dims"))}));
    ValuePtr two = em.AddConstant(Tensor::Scalar<int64_t>(2),
                                  ctx.Hint(node, "two"));
    ASSIGN_OR_RETURN(ValuePtr begin,
                     em.Emit1("Div", ctx.Hint(node, "begin"), {diff, two}));
    ASSIGN_OR_RETURN(ValuePtr end,
                     em.Emit1("Sub", ctx.Hint(node, "end"), {diff, begin}));
    ASSIGN_OR_RETURN(pads, em.Emit1("Concat", ctx.Hint(node, "pads"),
                                    {begin, end},
                                    {{"axis", MakeIntAttr(0)}}));
  }
  ValuePtr value = Empty(ctx, node, x->dtype);
  ASSIGN_OR_RETURN(
      ValuePtr y,
      em.Emit1("Pad", ctx.Hint(node),
               {x, pads, value, Int64s(ctx, axes, ctx.Hint(node, "axes"))},
               {{"mode", MakeStringAttr("constant")}}));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertGridSample(const onnx::NodeProto& node,
                               ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr grid, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(grid, EmitCastTo(ctx, ctx.Hint(node, "grid"), grid,
                                    x->dtype));
  std::string mode = AttrString(node, "mode", ctx.opset() < 20 ? "bilinear"
                                                               : "linear");
  if (mode == "bilinear") mode = "linear";
  if (mode == "bicubic") mode = "cubic";
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1(
          "GridSample", ctx.Hint(node), {x, grid},
          {{"mode", MakeStringAttr(mode)},
           {"padding_mode",
            MakeStringAttr(AttrString(node, "padding_mode", "zeros"))},
           {"align_corners",
            MakeBoolAttr(AttrInt(node, "align_corners", 0) != 0)}}));
  return ctx.SetOutput(node, 0, y);
}

// --- Windows: Conv, ConvTranspose, pools, Col2Im ----------------------------

struct NdWindow {
  std::vector<int64_t> kernel, strides, pads, dilations;
};

// The window attributes of an n-D op, auto_pad resolved into explicit pads
// for the spatial input dims `in` (SAME_* need them known).
absl::StatusOr<NdWindow> ResolveNd(const onnx::NodeProto& node,
                                   const Shape& x, std::vector<int64_t> kernel) {
  const size_t n = kernel.size();
  NdWindow w;
  w.kernel = std::move(kernel);
  w.strides = AttrInts(node, "strides").value_or(std::vector<int64_t>(n, 1));
  w.dilations =
      AttrInts(node, "dilations").value_or(std::vector<int64_t>(n, 1));
  w.pads = AttrInts(node, "pads").value_or(std::vector<int64_t>(2 * n, 0));
  if (w.strides.size() != n || w.dilations.size() != n ||
      w.pads.size() != 2 * n) {
    return Bad(node, absl::StrCat("strides, dilations and pads do not fit a ",
                                  n, "-D window"));
  }
  const std::string auto_pad = AttrString(node, "auto_pad", "NOTSET");
  if (auto_pad == "VALID") w.pads.assign(2 * n, 0);
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") return w;
  if (x.unknown_rank() || x.rank() != static_cast<int>(n) + 2) {
    return Bad(node, "auto_pad SAME needs the input's rank known");
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t size = x.dim(2 + i), s = w.strides[i];
    if (size < 0) return Bad(node, "auto_pad SAME needs the spatial dims");
    if (s < 1) return Bad(node, "strides must be >= 1");
    const int64_t k = (w.kernel[i] - 1) * w.dilations[i] + 1;
    const int64_t out = (size + s - 1) / s;
    const int64_t total = std::max<int64_t>(0, (out - 1) * s + k - size);
    const int64_t small = total / 2, large = total - small;
    w.pads[i] = auto_pad == "SAME_UPPER" ? small : large;
    w.pads[n + i] = auto_pad == "SAME_UPPER" ? large : small;
  }
  return w;
}

AttrList WindowAttrs(const NdWindow& w) {
  return {{"strides", MakeIntListAttr(w.strides)},
          {"pads", MakeIntListAttr(w.pads)},
          {"dilations", MakeIntListAttr(w.dilations)}};
}

// y + b reshaped to [1, C, 1...].
absl::StatusOr<ValuePtr> AddChannelBias(ImportContext& ctx,
                                        const onnx::NodeProto& node,
                                        ValuePtr y, ValuePtr b, int rank,
                                        absl::string_view hint) {
  std::vector<int64_t> shape(rank, 1);
  shape[1] = -1;
  ASSIGN_OR_RETURN(ValuePtr b4,
                   EmitReshape(ctx, ctx.Hint(node, "bias"), b, shape));
  return ctx.em().Emit1("Add", hint, {y, b4});
}

// A folded BatchNormalization after an N-d Conv: y * s + t per channel.
absl::StatusOr<ValuePtr> ApplyBatchNorm(ImportContext& ctx,
                                        const onnx::NodeProto& bn, ValuePtr y,
                                        int rank) {
  GraphEmitter& em = ctx.em();
  std::vector<ValuePtr> p(5);
  for (int i = 1; i < 5; ++i) {
    ASSIGN_OR_RETURN(p[i], ctx.Input(bn, i));
  }
  ValuePtr eps = em.AddConstant(
      ScalarTensor(p[4]->dtype, AttrFloat(bn, "epsilon", 1e-5f)),
      ctx.Hint(bn, "epsilon"));
  ASSIGN_OR_RETURN(ValuePtr v, em.Emit1("Add", ctx.Hint(bn, "var_eps"),
                                        {p[4], eps}));
  ASSIGN_OR_RETURN(v, em.Emit1("Sqrt", ctx.Hint(bn, "std"), {v}));
  ASSIGN_OR_RETURN(ValuePtr s, em.Emit1("Div", ctx.Hint(bn, "scale"),
                                        {p[1], v}));
  ASSIGN_OR_RETURN(ValuePtr ms, em.Emit1("Mul", ctx.Hint(bn, "mean_scaled"),
                                         {p[3], s}));
  ASSIGN_OR_RETURN(ValuePtr t, em.Emit1("Sub", ctx.Hint(bn, "shift"),
                                        {p[2], ms}));
  std::vector<int64_t> shape(rank, 1);
  shape[1] = -1;
  ASSIGN_OR_RETURN(s, EmitReshape(ctx, ctx.Hint(bn, "s"), s, shape));
  ASSIGN_OR_RETURN(t, EmitReshape(ctx, ctx.Hint(bn, "t"), t, shape));
  ASSIGN_OR_RETURN(y, em.Emit1("Mul", ctx.Hint(bn, "mul"), {y, s}));
  return em.Emit1("Add", ctx.Hint(bn), {y, t});
}

ConvertFn& Conv2DHandler() {
  static ConvertFn fn = nullptr;
  return fn;
}
ConvertFn& Pool2DHandler() {
  static ConvertFn fn = nullptr;
  return fn;
}

absl::Status ConvertConvNd(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr w, ctx.Input(node, 1));
  if (w->shape.unknown_rank() || w->shape.rank() < 3) {
    return Bad(node, absl::StrCat("needs weights of known rank >= 3, got ",
                                  w->shape.DebugString()));
  }
  const int rank = w->shape.rank();
  if (rank == 4 && Conv2DHandler() != nullptr) {
    return Conv2DHandler()(node, ctx);
  }
  ASSIGN_OR_RETURN(ValuePtr b, ctx.OptionalInput(node, 2));
  std::vector<int64_t> kernel(w->shape.dims().begin() + 2,
                              w->shape.dims().end());
  kernel = AttrInts(node, "kernel_shape").value_or(kernel);
  ASSIGN_OR_RETURN(NdWindow win, ResolveNd(node, x->shape, kernel));
  AttrList attrs = WindowAttrs(win);
  attrs["group"] = MakeIntAttr(AttrInt(node, "group", 1));
  auto it = ctx.folded_bn().find(&node);
  const onnx::NodeProto* bn = it == ctx.folded_bn().end() ? nullptr
                                                           : it->second;
  const bool last = b == nullptr && bn == nullptr;
  // The CPU kernel is float32: other float types convert around it.
  const DataType dtype = x->dtype;
  const bool convert = dtype != DT_FLOAT;
  if (convert) {
    ASSIGN_OR_RETURN(x, EmitCastTo(ctx, ctx.Hint(node, "x32"), x, DT_FLOAT));
    ASSIGN_OR_RETURN(w, EmitCastTo(ctx, ctx.Hint(node, "w32"), w, DT_FLOAT));
  }
  ASSIGN_OR_RETURN(ValuePtr y,
                   ctx.em().Emit1("ConvND",
                                  last && !convert ? ctx.Hint(node)
                                                   : ctx.Hint(node, "conv"),
                                  {x, w}, attrs));
  if (convert) {
    ASSIGN_OR_RETURN(y, EmitCastTo(ctx, last ? ctx.Hint(node)
                                             : ctx.Hint(node, "conv_t"),
                                   y, dtype));
  }
  if (b != nullptr) {
    ASSIGN_OR_RETURN(y, AddChannelBias(ctx, node, y, b, rank,
                                       bn == nullptr ? ctx.Hint(node)
                                                     : ctx.Hint(node, "b")));
  }
  if (bn != nullptr) {
    ASSIGN_OR_RETURN(y, ApplyBatchNorm(ctx, *bn, y, rank));
    return ctx.SetOutput(*bn, 0, y);
  }
  return ctx.SetOutput(node, 0, y);
}

// DeformConv (2-D) -> sluice's DeformConv, a CPU kernel; an absent bias is
// zeros, an absent mask one 1.
absl::Status ConvertDeformConv(const onnx::NodeProto& node,
                               ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr w, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr offset, ctx.Input(node, 2));
  ASSIGN_OR_RETURN(ValuePtr b, ctx.OptionalInput(node, 3));
  ASSIGN_OR_RETURN(ValuePtr mask, ctx.OptionalInput(node, 4));
  if (w->shape.unknown_rank() || w->shape.rank() != 4 || w->shape.dim(0) < 0 ||
      w->shape.dim(2) < 0 || w->shape.dim(3) < 0) {
    return Bad(node, absl::StrCat("needs 2-D weights of known shape "
                                  "[O, C/group, kH, kW], got ",
                                  w->shape.DebugString()));
  }
  std::vector<int64_t> kernel = {w->shape.dim(2), w->shape.dim(3)};
  if (AttrInts(node, "kernel_shape").value_or(kernel) != kernel) {
    return Bad(node, "kernel_shape differs from the weights' window");
  }
  ASSIGN_OR_RETURN(NdWindow win, ResolveNd(node, x->shape, kernel));
  AttrList attrs = WindowAttrs(win);
  attrs["group"] = MakeIntAttr(AttrInt(node, "group", 1));
  attrs["offset_group"] = MakeIntAttr(AttrInt(node, "offset_group", 1));
  GraphEmitter& em = ctx.em();
  if (b == nullptr) {
    ASSIGN_OR_RETURN(Tensor zeros,
                     Tensor::Zeros(x->dtype, Shape({w->shape.dim(0)})));
    b = em.AddConstant(std::move(zeros), ctx.Hint(node, "bias"));
  }
  if (mask == nullptr) {
    mask = em.AddConstant(ScalarTensor(x->dtype, 1), ctx.Hint(node, "mask"));
  }
  ASSIGN_OR_RETURN(ValuePtr y, em.Emit1("DeformConv", ctx.Hint(node),
                                        {x, w, offset, b, mask}, attrs));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertConvTranspose(const onnx::NodeProto& node,
                                  ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr w, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr b, ctx.OptionalInput(node, 2));
  if (w->shape.unknown_rank() || w->shape.rank() < 3) {
    return Bad(node, "needs weights of known rank >= 3");
  }
  const int rank = w->shape.rank();
  const size_t n = rank - 2;
  std::vector<int64_t> kernel(w->shape.dims().begin() + 2,
                              w->shape.dims().end());
  kernel = AttrInts(node, "kernel_shape").value_or(kernel);
  NdWindow win;
  win.kernel = kernel;
  win.strides = AttrInts(node, "strides").value_or(std::vector<int64_t>(n, 1));
  win.dilations =
      AttrInts(node, "dilations").value_or(std::vector<int64_t>(n, 1));
  win.pads = AttrInts(node, "pads").value_or(std::vector<int64_t>(2 * n, 0));
  std::vector<int64_t> out_pad =
      AttrInts(node, "output_padding").value_or(std::vector<int64_t>(n, 0));
  if (win.kernel.size() != n || win.strides.size() != n ||
      win.dilations.size() != n || win.pads.size() != 2 * n ||
      out_pad.size() != n) {
    return Bad(node, "window attributes do not fit the weights' rank");
  }
  const std::string auto_pad = AttrString(node, "auto_pad", "NOTSET");
  std::optional<std::vector<int64_t>> out_shape = AttrInts(node, "output_shape");
  if (out_shape && out_shape->size() == n + 2) {
    out_shape->erase(out_shape->begin(), out_shape->begin() + 2);
  }
  if (auto_pad == "VALID") win.pads.assign(2 * n, 0);
  if (out_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    if (x->shape.unknown_rank() || x->shape.rank() != rank) {
      return Bad(node, "output_shape / auto_pad need the input's rank");
    }
    if (out_shape && out_shape->size() != n) {
      return Bad(node, "output_shape does not fit the weights' rank");
    }
    for (size_t i = 0; i < n; ++i) {
      const int64_t in = x->shape.dim(2 + i);
      if (in < 0) return Bad(node, "output_shape / auto_pad need the dims");
      const int64_t target = out_shape ? (*out_shape)[i] : in * win.strides[i];
      const int64_t total = win.strides[i] * (in - 1) + out_pad[i] +
                            (win.kernel[i] - 1) * win.dilations[i] + 1 -
                            target;
      const int64_t half = FloorDiv(total, 2);
      if (auto_pad == "SAME_UPPER") {
        win.pads[i] = half;
        win.pads[n + i] = total - half;
      } else {
        win.pads[i] = total - half;
        win.pads[n + i] = half;
      }
    }
  }
  AttrList attrs = WindowAttrs(win);
  attrs["group"] = MakeIntAttr(AttrInt(node, "group", 1));
  attrs["output_padding"] = MakeIntListAttr(out_pad);
  ASSIGN_OR_RETURN(ValuePtr y,
                   ctx.em().Emit1("ConvTranspose",
                                  b == nullptr ? ctx.Hint(node)
                                               : ctx.Hint(node, "convt"),
                                  {x, w}, attrs));
  if (b != nullptr) {
    ASSIGN_OR_RETURN(y, AddChannelBias(ctx, node, y, b, rank, ctx.Hint(node)));
  }
  return ctx.SetOutput(node, 0, y);
}

bool WantsIndices(const onnx::NodeProto& node) {
  return node.output_size() > 1 && !node.output(1).empty();
}

// MaxPool, AveragePool and LpPool in the forms Pool2DHandler cannot take.
absl::Status ConvertPoolNd(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  std::optional<std::vector<int64_t>> kernel = AttrInts(node, "kernel_shape");
  if (!kernel) return Bad(node, "needs kernel_shape");
  const std::string& op = node.op_type();
  bool dilated = false;
  for (int64_t d :
       AttrInts(node, "dilations").value_or(std::vector<int64_t>{})) {
    dilated = dilated || d != 1;
  }
  // ops_nn.cc refuses an overhanging ceil_mode window that counts padding.
  const bool ceil_counting = AttrInt(node, "ceil_mode", 0) != 0 &&
                             AttrInt(node, "count_include_pad", 0) != 0;
  if (op != "LpPool" && kernel->size() == 2 && !dilated && !ceil_counting &&
      x->dtype == DT_FLOAT && !WantsIndices(node) &&
      Pool2DHandler() != nullptr) {
    return Pool2DHandler()(node, ctx);
  }
  ASSIGN_OR_RETURN(NdWindow win, ResolveNd(node, x->shape, *kernel));
  AttrList attrs = WindowAttrs(win);
  attrs["kernel_shape"] = MakeIntListAttr(win.kernel);
  attrs["ceil_mode"] = MakeBoolAttr(AttrInt(node, "ceil_mode", 0) != 0);
  if (WantsIndices(node)) {
    attrs["storage_order"] = MakeIntAttr(AttrInt(node, "storage_order", 0));
    ASSIGN_OR_RETURN(std::vector<ValuePtr> ys,
                     ctx.em().Emit("MaxPoolWithIndices", ctx.Hint(node), {x},
                                   attrs));
    RETURN_IF_ERROR(ctx.SetOutput(node, 0, ys[0]));
    return ctx.SetOutput(node, 1, ys[1]);
  }
  attrs["mode"] = MakeStringAttr(op == "MaxPool"       ? "max"
                                 : op == "AveragePool" ? "avg"
                                                       : "lp");
  attrs["count_include_pad"] =
      MakeBoolAttr(AttrInt(node, "count_include_pad", 0) != 0);
  attrs["p"] = MakeIntAttr(AttrInt(node, "p", 2));
  ASSIGN_OR_RETURN(ValuePtr y,
                   ctx.em().Emit1("PoolND", ctx.Hint(node), {x}, attrs));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertGlobalLpPool(const onnx::NodeProto& node,
                                 ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  if (x->shape.unknown_rank() || x->shape.rank() < 3) {
    return Bad(node, "needs an input of known rank >= 3");
  }
  const size_t n = x->shape.rank() - 2;
  std::vector<int64_t> kernel;
  for (size_t i = 0; i < n; ++i) {
    if (x->shape.dim(2 + i) < 1) {
      return Bad(node, "needs the spatial dims known at import");
    }
    kernel.push_back(x->shape.dim(2 + i));
  }
  AttrList attrs = {{"kernel_shape", MakeIntListAttr(kernel)},
                    {"strides", MakeIntListAttr(std::vector<int64_t>(n, 1))},
                    {"dilations", MakeIntListAttr(std::vector<int64_t>(n, 1))},
                    {"pads", MakeIntListAttr(std::vector<int64_t>(2 * n, 0))},
                    {"mode", MakeStringAttr("lp")},
                    {"p", MakeIntAttr(AttrInt(node, "p", 2))}};
  ASSIGN_OR_RETURN(ValuePtr y,
                   ctx.em().Emit1("PoolND", ctx.Hint(node), {x}, attrs));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertCol2Im(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr image, ParamOr(ctx, node, 1, DT_INT64));
  ASSIGN_OR_RETURN(ValuePtr block, ParamOr(ctx, node, 2, DT_INT64));
  AttrList attrs;
  for (const char* a : {"strides", "pads", "dilations"}) {
    attrs[a] = MakeIntListAttr(
        AttrInts(node, a).value_or(std::vector<int64_t>{}));
  }
  ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1("Col2Im", ctx.Hint(node),
                                              {x, image, block}, attrs));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertAffineGrid(const onnx::NodeProto& node,
                               ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr theta, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr size, ParamOr(ctx, node, 1, DT_INT64));
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("AffineGrid", ctx.Hint(node), {theta, size},
                     {{"align_corners",
                       MakeBoolAttr(AttrInt(node, "align_corners", 0) != 0)}}));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertMaxUnpool(const onnx::NodeProto& node,
                              ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr indices, ParamOr(ctx, node, 1, DT_INT64));
  ASSIGN_OR_RETURN(ValuePtr shape, ParamOr(ctx, node, 2, DT_INT64));
  std::optional<std::vector<int64_t>> kernel = AttrInts(node, "kernel_shape");
  if (!kernel) return Bad(node, "needs kernel_shape");
  const size_t n = kernel->size();
  AttrList attrs = {
      {"kernel_shape", MakeIntListAttr(*kernel)},
      {"strides", MakeIntListAttr(AttrInts(node, "strides")
                                      .value_or(std::vector<int64_t>(n, 1)))},
      {"pads", MakeIntListAttr(AttrInts(node, "pads")
                                   .value_or(std::vector<int64_t>(2 * n, 0)))}};
  ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1("MaxUnpool", ctx.Hint(node),
                                              {x, indices, shape}, attrs));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertRoiAlign(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr rois, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(rois, EmitCastTo(ctx, ctx.Hint(node, "rois"), rois,
                                    x->dtype));
  ASSIGN_OR_RETURN(ValuePtr batch, ParamOr(ctx, node, 2, DT_INT64));
  // Version 10 had no coordinate_transformation_mode and behaved as
  // output_half_pixel.
  const std::string ct = AttrString(
      node, "coordinate_transformation_mode",
      ctx.opset() < 16 ? "output_half_pixel" : "half_pixel");
  AttrList attrs = {
      {"mode", MakeStringAttr(AttrString(node, "mode", "avg"))},
      {"coordinate_transformation_mode", MakeStringAttr(ct)},
      {"output_height", MakeIntAttr(AttrInt(node, "output_height", 1))},
      {"output_width", MakeIntAttr(AttrInt(node, "output_width", 1))},
      {"sampling_ratio", MakeIntAttr(AttrInt(node, "sampling_ratio", 0))},
      {"spatial_scale", MakeFloatAttr(AttrFloat(node, "spatial_scale", 1.0f))}};
  ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1("RoiAlign", ctx.Hint(node),
                                              {x, rois, batch}, attrs));
  return ctx.SetOutput(node, 0, y);
}

std::string CheckWindowNd(const onnx::NodeProto& node, int opset) {
  const std::string pad = AttrString(node, "auto_pad", "NOTSET");
  if (pad != "NOTSET" && pad != "VALID" && pad != "SAME_UPPER" &&
      pad != "SAME_LOWER") {
    return absl::StrCat("auto_pad '", pad, "' is not supported");
  }
  for (int i = 2; i < node.output_size(); ++i) {
    if (!node.output(i).empty()) return "more than two outputs";
  }
  if (node.op_type() != "MaxPool" && WantsIndices(node)) {
    return "a second output is only supported on MaxPool";
  }
  return "";
}

}  // namespace

void AddVisionOps(OnnxOpTable* table) {
  // REQUIRES: AddNnOps ran (its 2-D Conv and pool handlers emit the ops
  // that have GPU kernels; the N-d handlers fall back to them).
  auto conv = table->find("Conv");
  if (conv != table->end()) Conv2DHandler() = conv->second.convert;
  auto pool = table->find("MaxPool");
  if (pool != table->end()) Pool2DHandler() = pool->second.convert;
  (*table)["Conv"] = {ConvertConvNd, CheckWindowNd};
  (*table)["MaxPool"] = {ConvertPoolNd, CheckWindowNd};
  (*table)["AveragePool"] = {ConvertPoolNd, CheckWindowNd};
  (*table)["LpPool"] = {ConvertPoolNd, CheckWindowNd};
  (*table)["GlobalLpPool"] = {ConvertGlobalLpPool, nullptr};
  (*table)["DeformConv"] = {ConvertDeformConv, nullptr};
  (*table)["ConvTranspose"] = {ConvertConvTranspose, CheckWindowNd};
  (*table)["Col2Im"] = {ConvertCol2Im, nullptr};
  (*table)["Resize"] = {ConvertResize, nullptr};
  (*table)["Pad"] = {ConvertPad, nullptr};
  (*table)["CenterCropPad"] = {ConvertCenterCropPad, nullptr};
  (*table)["GridSample"] = {ConvertGridSample, nullptr};
  (*table)["AffineGrid"] = {ConvertAffineGrid, nullptr};
  (*table)["MaxUnpool"] = {ConvertMaxUnpool, nullptr};
  (*table)["RoiAlign"] = {ConvertRoiAlign, nullptr};
}

}  // namespace sluice
