// ONNX normalisations and small compositions: RMSNormalization (sluice's
// RMSNorm where it can say it, else composed), LRN (sluice's LRN, a CPU
// kernel), and, lowered to existing sluice ops (no kernel of their own):
// LpNormalization,
// InstanceNormalization and GroupNormalization (LayerNorm over the spatial
// dims or the groups, then the per-channel scale and bias), Mean, Swish,
// Shrink, and DepthToSpace/SpaceToDepth (reshape, transpose, reshape). Each
// needs the input's rank known at import (GroupNormalization its channels
// too, DepthToSpace its shape); dims unknown there are read at run time.
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/tensor_proto.h"
#include "graph/attr_map.h"
#include "onnx/import_context.h"

namespace sluice {
namespace {

// The axes [axis, rank) of x, for normalisations over the trailing dims.
absl::StatusOr<std::vector<int64_t>> TrailingAxes(const ValuePtr& x,
                                                  int64_t axis) {
  if (x->shape.unknown_rank()) {
    return absl::UnimplementedError(
        "needs the input's rank known at import time");
  }
  const int64_t rank = x->shape.rank();
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("axis ", axis, " out of range for rank ", rank));
  }
  std::vector<int64_t> axes;
  for (int64_t i = a; i < rank; ++i) axes.push_back(i);
  return axes;
}

// Whether `s` broadcasts to `target` without growing it (numpy rules,
// aligned at the right): every dim of s is 1 or target's.
bool BroadcastsInto(const Shape& s, const Shape& target) {
  if (s.unknown_rank() || s.rank() > target.rank()) return false;
  const int shift = target.rank() - s.rank();
  for (int i = 0; i < s.rank(); ++i) {
    if (s.dim(i) != 1 && s.dim(i) != target.dim(shift + i)) return false;
  }
  return true;
}

// RMSNormalization as one sluice RMSNorm node when the op can say it:
// x.shape[axis:] known at import, scale of x's dtype and of that shape (or
// expandable to it), and, for 16-bit x, statistics in float32 (stash_type
// 1), which is what the RMSNorm kernels keep. nullptr when it cannot
// (ConvertRmsNorm then composes it).
absl::StatusOr<ValuePtr> DirectRmsNorm(const onnx::NodeProto& node,
                                       ImportContext& ctx, const ValuePtr& x,
                                       ValuePtr scale,
                                       const std::vector<int64_t>& axes) {
  const bool narrow = x->dtype == DT_FLOAT16 || x->dtype == DT_BFLOAT16;
  const bool wide = x->dtype == DT_FLOAT || x->dtype == DT_DOUBLE;
  if (!(narrow || wide) || scale->dtype != x->dtype ||
      (narrow && AttrInt(node, "stash_type", 1) != 1)) {
    return ValuePtr(nullptr);
  }
  std::vector<int64_t> norm_dims;
  for (int64_t a : axes) norm_dims.push_back(x->shape.dim(a));
  const Shape target(norm_dims);
  // A dimension unknown at import could broadcast at run time, which the
  // op's scale (exactly x.shape[axis:]) cannot.
  if (!target.IsFullyDefined()) return ValuePtr(nullptr);
  if (scale->shape != target) {
    if (!BroadcastsInto(scale->shape, target)) return ValuePtr(nullptr);
    ASSIGN_OR_RETURN(scale,
                     ctx.em().Emit1("Expand", ctx.Hint(node, "scale"), {scale},
                                    {{"shape", MakeIntListAttr(norm_dims)}}));
  }
  return ctx.em().Emit1(
      "RMSNorm", ctx.Hint(node), {x, scale},
      {{"axis", MakeIntAttr(axes.front())},
       {"epsilon", MakeFloatAttr(AttrFloat(node, "epsilon", 1e-5f))}});
}

// Y = X / sqrt(mean(X^2 over [axis, rank)) + epsilon) * scale, computed in
// float32 for 16-bit inputs (stash_type 1): one RMSNorm where it can be
// (DirectRmsNorm), else composed of Mul, ReduceMean, Add, Rsqrt and Mul.
absl::Status ConvertRmsNorm(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr scale, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                   TrailingAxes(x, AttrInt(node, "axis", -1)));
  ASSIGN_OR_RETURN(ValuePtr direct, DirectRmsNorm(node, ctx, x, scale, axes));
  if (direct != nullptr) return ctx.SetOutput(node, 0, direct);
  const DataType out_dtype = x->dtype;
  const bool widen = (out_dtype == DT_FLOAT16 || out_dtype == DT_BFLOAT16) &&
                     AttrInt(node, "stash_type", 1) == 1;
  if (widen) {
    ASSIGN_OR_RETURN(x, EmitCastTo(ctx, ctx.Hint(node, "x32"), x, DT_FLOAT));
  }
  auto& em = ctx.em();
  ASSIGN_OR_RETURN(ValuePtr sq, em.Emit1("Mul", ctx.Hint(node, "sq"), {x, x}));
  ASSIGN_OR_RETURN(ValuePtr ms,
                   em.Emit1("ReduceMean", ctx.Hint(node, "mean_sq"), {sq},
                            {{"axes", MakeIntListAttr(axes)},
                             {"keepdims", MakeBoolAttr(true)}}));
  ValuePtr eps = Scalar(ctx, x->dtype, AttrFloat(node, "epsilon", 1e-5f),
                        ctx.Hint(node, "epsilon"));
  ASSIGN_OR_RETURN(ms, em.Emit1("Add", ctx.Hint(node, "plus_eps"), {ms, eps}));
  ASSIGN_OR_RETURN(ValuePtr inv,
                   em.Emit1("Rsqrt", ctx.Hint(node, "inv_rms"), {ms}));
  ASSIGN_OR_RETURN(ValuePtr y,
                   em.Emit1("Mul", ctx.Hint(node, "normed"), {x, inv}));
  if (widen) {
    ASSIGN_OR_RETURN(y, EmitCastTo(ctx, ctx.Hint(node, "normed16"), y,
                                   out_dtype));
  }
  ASSIGN_OR_RETURN(y, em.Emit1("Mul", ctx.Hint(node), {y, scale}));
  return ctx.SetOutput(node, 0, y);
}

// x / ||x||_p along axis (p 1 or 2).
std::string CheckLpNorm(const onnx::NodeProto& node, int opset) {
  const int64_t p = AttrInt(node, "p", 2);
  if (p != 1 && p != 2) return absl::StrCat("p = ", p, " (1 or 2 only)");
  return "";
}

absl::Status ConvertLpNorm(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  const int64_t p = AttrInt(node, "p", 2);
  const AttrList reduce = {
      {"axes", MakeIntListAttr({AttrInt(node, "axis", -1)})},
      {"keepdims", MakeBoolAttr(true)}};
  auto& em = ctx.em();
  ASSIGN_OR_RETURN(ValuePtr t,
                   p == 1 ? em.Emit1("Abs", ctx.Hint(node, "abs"), {x})
                          : em.Emit1("Mul", ctx.Hint(node, "sq"), {x, x}));
  ASSIGN_OR_RETURN(ValuePtr norm,
                   em.Emit1("ReduceSum", ctx.Hint(node, "sum"), {t}, reduce));
  if (p == 2) {
    ASSIGN_OR_RETURN(norm, em.Emit1("Sqrt", ctx.Hint(node, "norm"), {norm}));
  }
  // A zero norm divides by 1 instead: the row stays 0, not NaN.
  ValuePtr zero = Scalar(ctx, norm->dtype, 0, ctx.Hint(node, "zero"));
  ValuePtr one = Scalar(ctx, norm->dtype, 1, ctx.Hint(node, "one"));
  ASSIGN_OR_RETURN(ValuePtr is_zero,
                   em.Emit1("Equal", ctx.Hint(node, "is_zero"), {norm, zero}));
  ASSIGN_OR_RETURN(norm, em.Emit1("Where", ctx.Hint(node, "safe_norm"),
                                  {is_zero, one, norm}));
  ASSIGN_OR_RETURN(ValuePtr y, em.Emit1("Div", ctx.Hint(node), {x, norm}));
  return ctx.SetOutput(node, 0, y);
}

// x normalised over dims [axis, rank) by LayerNorm with unit scale and zero
// bias (x's rank known). The scale and bias are constants when those dims
// are known at import, else Fills of x's trailing shape made at run time.
absl::StatusOr<ValuePtr> Standardize(const onnx::NodeProto& node,
                                     ImportContext& ctx, ValuePtr x,
                                     int64_t axis, float eps) {
  std::vector<int64_t> dims(x->shape.dims().begin() + axis,
                            x->shape.dims().end());
  const bool known = Shape(dims).IsFullyDefined();
  ValuePtr trailing;
  if (!known) {
    ASSIGN_OR_RETURN(trailing,
                     ctx.em().Emit1("Shape", ctx.Hint(node, "norm_dims"), {x},
                                    {{"start", MakeIntAttr(axis)}}));
  }
  ValuePtr unit[2];
  for (int i = 0; i < 2; ++i) {
    const Tensor v = ScalarTensor(x->dtype, i == 0 ? 1.0 : 0.0);
    const std::string hint = ctx.Hint(node, i == 0 ? "ones" : "zeros");
    if (known) {
      ASSIGN_OR_RETURN(unit[i], ctx.em().CreateConstant(
                                    NodeLabel(node), x->dtype, Shape(dims),
                                    [&](Tensor& t) { FillWith(v, t); }, hint));
    } else {
      ASSIGN_OR_RETURN(
          unit[i], ctx.em().Emit1("Fill", hint, {trailing},
                                  {{"dtype", MakeTypeAttr(x->dtype)},
                                   {"value",
                                    MakeTensorAttr(TensorToProto(v))}}));
    }
  }
  return ctx.em().Emit1("LayerNorm", ctx.Hint(node, "standardized"),
                        {x, unit[0], unit[1]},
                        {{"axis", MakeIntAttr(axis)},
                         {"epsilon", MakeFloatAttr(eps)}});
}

// y * scale[c] + bias[c] for x of `rank` dims, channels on axis 1.
absl::StatusOr<ValuePtr> ChannelAffine(const onnx::NodeProto& node,
                                       ImportContext& ctx, ValuePtr y,
                                       int64_t rank) {
  ASSIGN_OR_RETURN(ValuePtr scale, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr bias, ctx.Input(node, 2));
  std::vector<int64_t> dims(rank - 1, 1);
  dims[0] = -1;
  ASSIGN_OR_RETURN(scale, EmitReshape(ctx, ctx.Hint(node, "scale_c"), scale,
                                      dims));
  ASSIGN_OR_RETURN(bias, EmitReshape(ctx, ctx.Hint(node, "bias_c"), bias,
                                     dims));
  ASSIGN_OR_RETURN(y, ctx.em().Emit1("Mul", ctx.Hint(node, "scaled"),
                                     {y, scale}));
  return ctx.em().Emit1("Add", ctx.Hint(node), {y, bias});
}

absl::Status ConvertInstanceNorm(const onnx::NodeProto& node,
                                 ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  if (x->shape.unknown_rank()) {
    return absl::UnimplementedError(
        "needs the input's rank known at import time");
  }
  if (x->shape.rank() < 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "needs an input of rank >= 3, got ", x->shape.DebugString()));
  }
  ASSIGN_OR_RETURN(ValuePtr y, Standardize(node, ctx, x, 2,
                                           AttrFloat(node, "epsilon", 1e-5f)));
  ASSIGN_OR_RETURN(y, ChannelAffine(node, ctx, y, x->shape.rank()));
  return ctx.SetOutput(node, 0, y);
}

// Version 21: scale and bias per channel (18 had them per group).
absl::Status ConvertGroupNorm(const onnx::NodeProto& node,
                              ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  const int64_t groups = AttrInt(node, "num_groups", 0);
  if (x->shape.unknown_rank() || x->shape.rank() < 3 || x->shape.dim(1) < 0) {
    return absl::UnimplementedError(absl::StrCat(
        "needs an input of known rank >= 3 with its channels known, got ",
        x->shape.DebugString()));
  }
  const int64_t n = x->shape.dim(0), c = x->shape.dim(1);
  if (groups <= 0 || c % groups != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_groups ", groups, " must divide the ", c, " channels"));
  }
  const bool known = x->shape.IsFullyDefined();
  const DataType t = x->dtype;
  const bool widen = (t == DT_FLOAT16 || t == DT_BFLOAT16) &&
                     AttrInt(node, "stash_type", 1) == 1;
  GraphEmitter& em = ctx.em();
  ValuePtr xs = x;
  if (widen) {
    ASSIGN_OR_RETURN(xs, EmitCastTo(ctx, ctx.Hint(node, "x32"), x, DT_FLOAT));
  }
  if (known) {
    ASSIGN_OR_RETURN(xs, EmitReshape(ctx, ctx.Hint(node, "grouped"), xs,
                                     {n, groups, -1}));
  } else {
    // [N, groups, C/groups * spatial] with N copied at run time (ONNX's 0).
    ValuePtr grouped = em.AddConstant(Int64Vector({0, groups, -1}),
                                      ctx.Hint(node, "grouped_shape"));
    ASSIGN_OR_RETURN(xs, em.Emit1("DynamicReshape", ctx.Hint(node, "grouped"),
                                  {xs, grouped},
                                  {{"allowzero", MakeBoolAttr(false)}}));
  }
  ASSIGN_OR_RETURN(ValuePtr y, Standardize(node, ctx, xs, 2,
                                           AttrFloat(node, "epsilon", 1e-5f)));
  if (known) {
    std::vector<int64_t> dims(x->shape.dims().begin(), x->shape.dims().end());
    ASSIGN_OR_RETURN(y, EmitReshape(ctx, ctx.Hint(node, "ungrouped"), y,
                                    dims));
  } else {
    ASSIGN_OR_RETURN(ValuePtr dims,
                     em.Emit1("Shape", ctx.Hint(node, "x_dims"), {x}));
    ASSIGN_OR_RETURN(y, em.Emit1("DynamicReshape", ctx.Hint(node, "ungrouped"),
                                 {y, dims},
                                 {{"allowzero", MakeBoolAttr(true)}}));
  }
  if (widen) {
    ASSIGN_OR_RETURN(y, EmitCastTo(ctx, ctx.Hint(node, "y16"), y, t));
  }
  ASSIGN_OR_RETURN(y, ChannelAffine(node, ctx, y, x->shape.rank()));
  return ctx.SetOutput(node, 0, y);
}

// Mean(x1, ..., xn) = (x1 + ... + xn) / n, broadcasting.
absl::Status ConvertMean(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr acc, ctx.Input(node, 0));
  for (int i = 1; i < node.input_size(); ++i) {
    ASSIGN_OR_RETURN(ValuePtr next, ctx.Input(node, i));
    ASSIGN_OR_RETURN(acc, ctx.em().Emit1(
                              "Add", ctx.Hint(node, absl::StrCat("sum", i)),
                              {acc, next}));
  }
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("Div", ctx.Hint(node),
                     {acc, Scalar(ctx, acc->dtype, node.input_size(),
                                  ctx.Hint(node, "n"))}));
  return ctx.SetOutput(node, 0, y);
}

// LRN -> sluice's LRN (a CPU kernel of its own).
absl::Status ConvertLrn(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("LRN", ctx.Hint(node), {x},
                     {{"alpha", MakeFloatAttr(AttrFloat(node, "alpha", 1e-4f))},
                      {"beta", MakeFloatAttr(AttrFloat(node, "beta", 0.75f))},
                      {"bias", MakeFloatAttr(AttrFloat(node, "bias", 1.0f))},
                      {"size", MakeIntAttr(AttrInt(node, "size", 0))}}));
  return ctx.SetOutput(node, 0, y);
}

std::string CheckLrn(const onnx::NodeProto& node, int opset) {
  if (AttrInt(node, "size", 0) < 1) return "needs a size attribute >= 1";
  return "";
}

// Swish(x) = x * sigmoid(alpha * x).
absl::Status ConvertSwish(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  auto& em = ctx.em();
  ValuePtr a = Scalar(ctx, x->dtype, AttrFloat(node, "alpha", 1.0f),
                      ctx.Hint(node, "alpha"));
  ASSIGN_OR_RETURN(ValuePtr ax, em.Emit1("Mul", ctx.Hint(node, "ax"), {x, a}));
  ASSIGN_OR_RETURN(ValuePtr s,
                   em.Emit1("Sigmoid", ctx.Hint(node, "sigmoid"), {ax}));
  ASSIGN_OR_RETURN(ValuePtr y, em.Emit1("Mul", ctx.Hint(node), {x, s}));
  return ctx.SetOutput(node, 0, y);
}

// Shrink: x + bias below -lambd, x - bias above lambd, 0 between.
absl::Status ConvertShrink(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  auto& em = ctx.em();
  const double lambd = AttrFloat(node, "lambd", 0.5f);
  const double bias = AttrFloat(node, "bias", 0.0f);
  ValuePtr lo = Scalar(ctx, x->dtype, -lambd, ctx.Hint(node, "lo"));
  ValuePtr hi = Scalar(ctx, x->dtype, lambd, ctx.Hint(node, "hi"));
  ValuePtr b = Scalar(ctx, x->dtype, bias, ctx.Hint(node, "bias"));
  ValuePtr zero = Scalar(ctx, x->dtype, 0, ctx.Hint(node, "zero"));
  ASSIGN_OR_RETURN(ValuePtr below,
                   em.Emit1("Less", ctx.Hint(node, "below"), {x, lo}));
  ASSIGN_OR_RETURN(ValuePtr above,
                   em.Emit1("Greater", ctx.Hint(node, "above"), {x, hi}));
  ASSIGN_OR_RETURN(ValuePtr plus, em.Emit1("Add", ctx.Hint(node, "plus"),
                                           {x, b}));
  ASSIGN_OR_RETURN(ValuePtr minus, em.Emit1("Sub", ctx.Hint(node, "minus"),
                                            {x, b}));
  ASSIGN_OR_RETURN(ValuePtr upper, em.Emit1("Where", ctx.Hint(node, "upper"),
                                            {above, minus, zero}));
  ASSIGN_OR_RETURN(ValuePtr y, em.Emit1("Where", ctx.Hint(node),
                                        {below, plus, upper}));
  return ctx.SetOutput(node, 0, y);
}

// DepthToSpace / SpaceToDepth on NCHW: a reshape to 6-D, a transpose and a
// reshape back (the ONNX definitions), with the shape known at import.
absl::Status ConvertDepthSpace(const onnx::NodeProto& node,
                               ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  if (!x->shape.IsFullyDefined() || x->shape.rank() != 4) {
    return absl::UnimplementedError("needs a known 4-D (NCHW) input shape");
  }
  const int64_t b = AttrInt(node, "blocksize", 0);
  const int64_t n = x->shape.dim(0), c = x->shape.dim(1);
  const int64_t h = x->shape.dim(2), w = x->shape.dim(3);
  std::vector<int64_t> six, perm, out;
  if (node.op_type() == "DepthToSpace") {
    if (b <= 0 || c % (b * b) != 0) {
      return absl::InvalidArgumentError("channels not divisible by blocksize^2");
    }
    if (AttrString(node, "mode", "DCR") == "CRD") {
      six = {n, c / (b * b), b, b, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      six = {n, b, b, c / (b * b), h, w};
      perm = {0, 3, 4, 1, 5, 2};
    }
    out = {n, c / (b * b), h * b, w * b};
  } else {
    if (b <= 0 || h % b != 0 || w % b != 0) {
      return absl::InvalidArgumentError("height or width not divisible by "
                                        "blocksize");
    }
    six = {n, c, h / b, b, w / b, b};
    // DCR (the default) puts the block offsets before the channels, CRD
    // (version 28) after them.
    perm = AttrString(node, "mode", "DCR") == "CRD"
               ? std::vector<int64_t>{0, 1, 3, 5, 2, 4}
               : std::vector<int64_t>{0, 3, 5, 1, 2, 4};
    out = {n, c * b * b, h / b, w / b};
  }
  ASSIGN_OR_RETURN(ValuePtr y, EmitReshape(ctx, ctx.Hint(node, "blocks"), x,
                                           six));
  ASSIGN_OR_RETURN(y, ctx.em().Emit1("Transpose", ctx.Hint(node, "moved"),
                                     {y}, {{"perm", MakeIntListAttr(perm)}}));
  ASSIGN_OR_RETURN(y, EmitReshape(ctx, ctx.Hint(node), y, out));
  return ctx.SetOutput(node, 0, y);
}

}  // namespace

void AddNormOps(OnnxOpTable* table) {
  (*table)["RMSNormalization"] = {ConvertRmsNorm, nullptr};
  (*table)["LpNormalization"] = {ConvertLpNorm, CheckLpNorm};
  (*table)["InstanceNormalization"] = {ConvertInstanceNorm, nullptr};
  (*table)["GroupNormalization"] = {ConvertGroupNorm, nullptr};
  (*table)["Mean"] = {ConvertMean, nullptr};
  (*table)["Swish"] = {ConvertSwish, nullptr};
  (*table)["LRN"] = {ConvertLrn, CheckLrn};
  (*table)["Shrink"] = {ConvertShrink, nullptr};
  (*table)["DepthToSpace"] = {ConvertDepthSpace, nullptr};
  (*table)["SpaceToDepth"] = {ConvertDepthSpace, nullptr};
}

}  // namespace sluice
