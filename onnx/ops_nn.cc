// ONNX linear algebra, normalisation, convolution, pooling and reductions
// -> sluice. Conv's bias becomes an Add; BatchNormalization is folded into
// the Conv before it where possible (the importer decides), and otherwise
// becomes Mul and Add with per-channel constants.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "onnx/import_context.h"

namespace sluice {
namespace {

absl::Status ConvertMatMul(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr a, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr b, ctx.Input(node, 1));
  // NumPy semantics for 1-D operands: promote, multiply, drop the dim.
  const bool a_vec = !a->shape.unknown_rank() && a->shape.rank() == 1;
  const bool b_vec = !b->shape.unknown_rank() && b->shape.rank() == 1;
  if (a_vec) {
    ASSIGN_OR_RETURN(a, ctx.em().Emit1("Unsqueeze", ctx.Hint(node, "a2d"), {a},
                                       {{"axes", MakeIntListAttr({0})}}));
  }
  if (b_vec) {
    ASSIGN_OR_RETURN(b, ctx.em().Emit1("Unsqueeze", ctx.Hint(node, "b2d"), {b},
                                       {{"axes", MakeIntListAttr({1})}}));
  }
  const bool squeeze = a_vec || b_vec;
  ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1("MatMul",
                                              squeeze ? ctx.Hint(node, "matmul")
                                                      : ctx.Hint(node),
                                              {a, b}));
  if (squeeze) {
    std::vector<int64_t> axes;
    if (a_vec) axes.push_back(-2);
    if (b_vec) axes.push_back(-1);
    ASSIGN_OR_RETURN(y, ctx.em().Emit1("Squeeze", ctx.Hint(node), {y},
                                       {{"axes", MakeIntListAttr(axes)}}));
  }
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertGemm(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr a, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr b, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr c, ctx.OptionalInput(node, 2));
  const float alpha = AttrFloat(node, "alpha", 1.0f);
  const float beta = AttrFloat(node, "beta", 1.0f);
  const bool has_c = c != nullptr && beta != 0.0f;
  const bool scale = alpha != 1.0f;
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1(
          "MatMul", has_c || scale ? ctx.Hint(node, "matmul") : ctx.Hint(node),
          {a, b},
          {{"transpose_a", MakeBoolAttr(AttrInt(node, "transA", 0) != 0)},
           {"transpose_b", MakeBoolAttr(AttrInt(node, "transB", 0) != 0)}}));
  if (scale) {
    ASSIGN_OR_RETURN(
        y,
        ctx.em().Emit1(
            "Mul", has_c ? ctx.Hint(node, "alpha") : ctx.Hint(node),
            {y, Scalar(ctx, y->dtype, alpha, ctx.Hint(node, "alpha_value"))}));
  }
  if (has_c) {
    if (beta != 1.0f) {
      ASSIGN_OR_RETURN(c, ctx.em().Emit1("Mul", ctx.Hint(node, "beta_c"),
                                         {c, Scalar(ctx, c->dtype, beta,
                                                    ctx.Hint(node, "beta"))}));
    }
    ASSIGN_OR_RETURN(y, ctx.em().Emit1("Add", ctx.Hint(node), {y, c}));
  }
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertSoftmax(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  const bool log = node.op_type() == "LogSoftmax";
  // Before version 13 the input is seen as 2-D, [d0*..*d(axis-1),
  // d(axis)*..*dn], and axis defaults to 1.
  bool coerce_2d = ctx.opset() < 13;
  int64_t axis = AttrInt(node, "axis", coerce_2d ? 1 : -1);
  std::vector<int64_t> dims;
  if (coerce_2d) {
    if (x->shape.unknown_rank()) {
      return absl::UnimplementedError(
          "softmax before opset 13 needs the input's rank known at import");
    }
    const int rank = x->shape.rank();
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank) {
      return absl::InvalidArgumentError(
          absl::StrCat("axis ", axis, " out of range for rank ", rank));
    }
    if (axis == rank - 1) {
      coerce_2d = false;  // the same as softmax over the last axis
    } else {
      int64_t outer = 1, inner = 1;
      for (int i = 0; i < rank; ++i) {
        if (x->shape.dim(i) < 0) {
          return absl::UnimplementedError(
              "softmax before opset 13 over several axes needs the input's "
              "shape known at import");
        }
        dims.push_back(x->shape.dim(i));
        (i < axis ? outer : inner) *= x->shape.dim(i);
      }
      ASSIGN_OR_RETURN(x, EmitReshape(ctx, ctx.Hint(node, "as_2d"), x,
                                      {outer, inner}));
      axis = 1;
    }
  }
  const bool last = !log && !coerce_2d;
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("Softmax",
                     last ? ctx.Hint(node) : ctx.Hint(node, "softmax"), {x},
                     {{"axis", MakeIntAttr(axis)}}));
  if (log) {
    ASSIGN_OR_RETURN(y, ctx.em().Emit1("Log",
                                       coerce_2d ? ctx.Hint(node, "log")
                                                 : ctx.Hint(node),
                                       {y}));
  }
  if (coerce_2d) {
    ASSIGN_OR_RETURN(y, EmitReshape(ctx, ctx.Hint(node), y, dims));
  }
  return ctx.SetOutput(node, 0, y);
}

std::string CheckExtraOutputs(const onnx::NodeProto& node, int opset) {
  for (int i = 1; i < node.output_size(); ++i) {
    if (!node.output(i).empty()) {
      return absl::StrCat("output ", i, " ('", node.output(i),
                          "') is not supported");
    }
  }
  return "";
}

absl::Status ConvertLayerNorm(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr scale, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr bias, ctx.OptionalInput(node, 2));
  const int64_t axis = AttrInt(node, "axis", -1);
  // sluice wants scale and bias of exactly x.shape[axis:].
  std::vector<int64_t> norm_shape;
  if (!x->shape.unknown_rank()) {
    int64_t a = axis < 0 ? axis + x->shape.rank() : axis;
    for (int64_t i = std::max<int64_t>(a, 0); i < x->shape.rank(); ++i) {
      norm_shape.push_back(x->shape.dim(i));
    }
  }
  Shape target(norm_shape);
  if (bias == nullptr) {
    ASSIGN_OR_RETURN(Tensor zeros, Tensor::Zeros(scale->dtype, scale->shape));
    bias = ctx.em().AddConstant(zeros, ctx.Hint(node, "zero_bias"));
  }
  for (ValuePtr* p : {&scale, &bias}) {
    if ((*p)->shape != target && target.IsFullyDefined()) {
      ASSIGN_OR_RETURN(
          *p, ctx.em().Emit1("Expand", ctx.Hint(node, "param"), {*p},
                             {{"shape", MakeIntListAttr(norm_shape)}}));
    }
  }
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1(
          "LayerNorm", ctx.Hint(node), {x, scale, bias},
          {{"axis", MakeIntAttr(axis)},
           {"epsilon", MakeFloatAttr(AttrFloat(node, "epsilon", 1e-5f))}}));
  RETURN_IF_ERROR(ctx.SetOutput(node, 0, y));
  const bool want_mean = node.output_size() > 1 && !node.output(1).empty();
  const bool want_inv = node.output_size() > 2 && !node.output(2).empty();
  if (!want_mean && !want_inv) return absl::OkStatus();
  // Mean and InvStdDev (kept dims, float32 for 16-bit inputs by stash_type
  // 1), composed: the LayerNorm kernel does not return them.
  if (x->shape.unknown_rank()) {
    return absl::UnimplementedError(
        "the Mean and InvStdDev outputs need the input's rank known");
  }
  std::vector<int64_t> axes;
  const int64_t rank = x->shape.rank();
  for (int64_t i = axis < 0 ? axis + rank : axis; i < rank; ++i) {
    axes.push_back(i);
  }
  if ((x->dtype == DT_FLOAT16 || x->dtype == DT_BFLOAT16) &&
      AttrInt(node, "stash_type", 1) == 1) {
    ASSIGN_OR_RETURN(x, EmitCastTo(ctx, ctx.Hint(node, "x32"), x, DT_FLOAT));
  }
  const AttrList reduce = {{"axes", MakeIntListAttr(axes)},
                           {"keepdims", MakeBoolAttr(true)}};
  auto& em = ctx.em();
  ASSIGN_OR_RETURN(ValuePtr mean,
                   em.Emit1("ReduceMean", ctx.Hint(node, "mean"), {x}, reduce));
  RETURN_IF_ERROR(ctx.SetOutput(node, 1, mean));
  if (!want_inv) return absl::OkStatus();
  ASSIGN_OR_RETURN(ValuePtr d, em.Emit1("Sub", ctx.Hint(node, "centred"),
                                        {x, mean}));
  ASSIGN_OR_RETURN(d, em.Emit1("Mul", ctx.Hint(node, "sq"), {d, d}));
  ASSIGN_OR_RETURN(ValuePtr var,
                   em.Emit1("ReduceMean", ctx.Hint(node, "var"), {d}, reduce));
  ValuePtr eps = em.AddConstant(
      ScalarTensor(var->dtype, AttrFloat(node, "epsilon", 1e-5f)),
      ctx.Hint(node, "epsilon"));
  ASSIGN_OR_RETURN(var, em.Emit1("Add", ctx.Hint(node, "var_eps"),
                                 {var, eps}));
  ASSIGN_OR_RETURN(ValuePtr inv, em.Emit1("Rsqrt", ctx.Hint(node, "inv_std"),
                                          {var}));
  return ctx.SetOutput(node, 2, inv);
}

// Per-channel scale and shift of a BatchNormalization: y = x * s + t with
// s = gamma / sqrt(var + eps), t = beta - mean * s. Folded when constant.
struct BnAffine {
  ValuePtr s, t;
};
absl::StatusOr<BnAffine> BatchNormAffine(const onnx::NodeProto& bn,
                                         ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr gamma, ctx.Input(bn, 1));
  ASSIGN_OR_RETURN(ValuePtr beta, ctx.Input(bn, 2));
  ASSIGN_OR_RETURN(ValuePtr mean, ctx.Input(bn, 3));
  ASSIGN_OR_RETURN(ValuePtr var, ctx.Input(bn, 4));
  GraphEmitter& em = ctx.em();
  ValuePtr eps = Scalar(ctx, var->dtype, AttrFloat(bn, "epsilon", 1e-5f),
                        ctx.Hint(bn, "epsilon"));
  ASSIGN_OR_RETURN(ValuePtr v,
                   em.Emit1("Add", ctx.Hint(bn, "var_eps"), {var, eps}));
  ASSIGN_OR_RETURN(ValuePtr sd, em.Emit1("Sqrt", ctx.Hint(bn, "std"), {v}));
  BnAffine out;
  ASSIGN_OR_RETURN(out.s, em.Emit1("Div", ctx.Hint(bn, "scale"), {gamma, sd}));
  ASSIGN_OR_RETURN(ValuePtr ms,
                   em.Emit1("Mul", ctx.Hint(bn, "mean_scaled"), {mean, out.s}));
  ASSIGN_OR_RETURN(out.t, em.Emit1("Sub", ctx.Hint(bn, "shift"), {beta, ms}));
  return out;
}

std::string CheckBatchNorm(const onnx::NodeProto& node, int opset) {
  if (AttrInt(node, "training_mode", 0) != 0) {
    return "training_mode = 1 is not supported";
  }
  return CheckExtraOutputs(node, opset);
}

absl::Status ConvertBatchNorm(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  if (x->shape.unknown_rank() || x->shape.rank() < 2) {
    return Bad(node, "needs an input of known rank >= 2");
  }
  ASSIGN_OR_RETURN(BnAffine affine, BatchNormAffine(node, ctx));
  std::vector<int64_t> shape = {-1};
  shape.resize(x->shape.rank() - 1, 1);
  ASSIGN_OR_RETURN(ValuePtr s,
                   EmitReshape(ctx, ctx.Hint(node, "s"), affine.s, shape));
  ASSIGN_OR_RETURN(ValuePtr t,
                   EmitReshape(ctx, ctx.Hint(node, "t"), affine.t, shape));
  ASSIGN_OR_RETURN(ValuePtr y,
                   ctx.em().Emit1("Mul", ctx.Hint(node, "mul"), {x, s}));
  ASSIGN_OR_RETURN(y, ctx.em().Emit1("Add", ctx.Hint(node), {y, t}));
  return ctx.SetOutput(node, 0, y);
}

// Spatial window attributes shared by Conv and the pools.
struct Window {
  std::vector<int64_t> kernel, strides, pads, dilations;
};

std::string CheckWindow(const onnx::NodeProto& node, int opset) {
  std::optional<std::vector<int64_t>> k = AttrInts(node, "kernel_shape");
  if (k && k->size() != 2) {
    return absl::StrCat(k->size(), "-D windows are not supported (2-D only)");
  }
  std::string pad = AttrString(node, "auto_pad", "NOTSET");
  if (pad != "NOTSET" && pad != "VALID" && pad != "SAME_UPPER" &&
      pad != "SAME_LOWER") {
    return absl::StrCat("auto_pad '", pad, "' is not supported");
  }
  if (node.op_type() == "MaxPool") {
    for (int64_t d :
         AttrInts(node, "dilations").value_or(std::vector<int64_t>{})) {
      if (d != 1) return "dilations other than 1 are not supported";
    }
    return CheckExtraOutputs(node, opset);
  }
  return "";
}

// Reads the window attributes and resolves auto_pad and ceil_mode into
// explicit (top, left, bottom, right) pads for input shape `in`.
absl::StatusOr<Window> ResolveWindow(const onnx::NodeProto& node,
                                     const Shape& in,
                                     std::vector<int64_t> kernel) {
  Window w;
  w.kernel = std::move(kernel);
  w.strides = AttrInts(node, "strides").value_or(std::vector<int64_t>{1, 1});
  w.dilations =
      AttrInts(node, "dilations").value_or(std::vector<int64_t>{1, 1});
  w.pads = AttrInts(node, "pads").value_or(std::vector<int64_t>{0, 0, 0, 0});
  if (w.kernel.size() != 2 || w.strides.size() != 2 ||
      w.dilations.size() != 2 || w.pads.size() != 4) {
    return Bad(node, "only 2-D windows (NCHW) are supported");
  }
  const std::string auto_pad = AttrString(node, "auto_pad", "NOTSET");
  const bool ceil_mode = AttrInt(node, "ceil_mode", 0) != 0;
  if (auto_pad == "VALID") w.pads = {0, 0, 0, 0};
  if (auto_pad == "NOTSET" && !ceil_mode) return w;
  if (in.unknown_rank() || in.rank() != 4 || in.dim(2) < 0 || in.dim(3) < 0) {
    return Bad(
        node,
        absl::StrCat(
            "auto_pad / ceil_mode need the spatial input dims, which are not "
            "known: ",
            in.DebugString()));
  }
  for (int i = 0; i < 2; ++i) {
    const int64_t size = in.dim(2 + i), s = w.strides[i];
    const int64_t k = (w.kernel[i] - 1) * w.dilations[i] + 1;
    if (s <= 0) return Bad(node, "strides must be positive");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t out = (size + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (out - 1) * s + k - size);
      int64_t small = total / 2, large = total - small;
      w.pads[i] = auto_pad == "SAME_UPPER" ? small : large;
      w.pads[i + 2] = auto_pad == "SAME_UPPER" ? large : small;
    }
    if (ceil_mode) {
      int64_t span = size + w.pads[i] + w.pads[i + 2] - k;
      int64_t out_floor = span / s + 1;
      int64_t out_ceil = (span + s - 1) / s + 1;
      // The last window must start inside the input or the begin padding.
      if ((out_ceil - 1) * s >= size + w.pads[i]) --out_ceil;
      if (out_ceil > out_floor) {
        w.pads[i + 2] +=
            (out_ceil - 1) * s + k - (size + w.pads[i] + w.pads[i + 2]);
        if (node.op_type() == "AveragePool" &&
            AttrInt(node, "count_include_pad", 0) != 0) {
          return Bad(node,
                     "ceil_mode with count_include_pad = 1 is not "
                     "supported when the last window overhangs");
        }
      }
    }
  }
  return w;
}

AttrList WindowAttrs(const Window& w) {
  return {{"strides", MakeIntListAttr(w.strides)},
          {"pads", MakeIntListAttr(w.pads)}};
}

absl::Status ConvertConv(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr w, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr b, ctx.OptionalInput(node, 2));
  if (w->shape.unknown_rank() || w->shape.rank() != 4) {
    return Bad(node, absl::StrCat("only 2-D convolution is supported; the "
                                  "weights are ",
                                  w->shape.DebugString()));
  }
  std::vector<int64_t> kernel =
      AttrInts(node, "kernel_shape")
          .value_or(std::vector<int64_t>{w->shape.dim(2), w->shape.dim(3)});
  ASSIGN_OR_RETURN(Window win, ResolveWindow(node, x->shape, kernel));
  const int64_t out_channels = w->shape.dim(0);
  std::string out_name = ctx.Hint(node);
  const onnx::NodeProto* bn = nullptr;
  auto it = ctx.folded_bn().find(&node);
  if (it != ctx.folded_bn().end()) {
    bn = it->second;
    out_name = ctx.Hint(*bn);
    // W' = W * s[o]; b' = (b - mean) * s + beta = b * s + t.
    ASSIGN_OR_RETURN(BnAffine affine, BatchNormAffine(*bn, ctx));
    ASSIGN_OR_RETURN(ValuePtr s4, EmitReshape(ctx, ctx.Hint(*bn, "s"), affine.s,
                                              {-1, 1, 1, 1}));
    ASSIGN_OR_RETURN(
        w, ctx.em().Emit1("Mul", ctx.Hint(node, "w_folded"), {w, s4}));
    if (b == nullptr) {
      b = affine.t;
    } else {
      ASSIGN_OR_RETURN(
          ValuePtr bs,
          ctx.em().Emit1("Mul", ctx.Hint(node, "b_scaled"), {b, affine.s}));
      ASSIGN_OR_RETURN(
          b, ctx.em().Emit1("Add", ctx.Hint(node, "b_folded"), {bs, affine.t}));
    }
  }
  AttrList attrs = WindowAttrs(win);
  attrs["dilations"] = MakeIntListAttr(win.dilations);
  attrs["group"] = MakeIntAttr(AttrInt(node, "group", 1));
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("Conv2D", b != nullptr ? ctx.Hint(node, "conv") : out_name,
                     {x, w}, attrs));
  if (b != nullptr) {
    ASSIGN_OR_RETURN(ValuePtr b4, EmitReshape(ctx, ctx.Hint(node, "bias"), b,
                                              {1, out_channels, 1, 1}));
    ASSIGN_OR_RETURN(y, ctx.em().Emit1("Add", out_name, {y, b4}));
  }
  if (bn != nullptr) return ctx.SetOutput(*bn, 0, y);
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertPool(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  std::optional<std::vector<int64_t>> kernel = AttrInts(node, "kernel_shape");
  if (!kernel) return Bad(node, "needs kernel_shape");
  ASSIGN_OR_RETURN(Window win, ResolveWindow(node, x->shape, *kernel));
  AttrList attrs = WindowAttrs(win);
  attrs["kernel_shape"] = MakeIntListAttr(win.kernel);
  std::string op = "MaxPool";
  if (node.op_type() == "AveragePool") {
    op = "AvgPool";
    for (int64_t d : win.dilations) {
      if (d != 1) return Bad(node, "dilations other than 1 are not supported");
    }
    attrs["count_include_pad"] =
        MakeBoolAttr(AttrInt(node, "count_include_pad", 0) != 0);
  }
  ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1(op, ctx.Hint(node), {x}, attrs));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertGlobalPool(const onnx::NodeProto& node,
                               ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  if (x->shape.unknown_rank() || x->shape.rank() < 3) {
    return Bad(node, "needs an input of known rank >= 3");
  }
  ValuePtr y;
  if (node.op_type() == "GlobalAveragePool" && x->shape.rank() == 4) {
    ASSIGN_OR_RETURN(y, ctx.em().Emit1("GlobalAvgPool", ctx.Hint(node), {x}));
  } else {
    std::vector<int64_t> axes;
    for (int i = 2; i < x->shape.rank(); ++i) axes.push_back(i);
    const std::string op =
        node.op_type() == "GlobalMaxPool" ? "ReduceMax" : "ReduceMean";
    ASSIGN_OR_RETURN(y, ctx.em().Emit1(op, ctx.Hint(node), {x},
                                       {{"axes", MakeIntListAttr(axes)},
                                        {"keepdims", MakeBoolAttr(true)}}));
  }
  return ctx.SetOutput(node, 0, y);
}

// Emits the sluice reductions (ReduceSum, ReduceMean, ReduceMax, ReduceMin,
// ReduceProd) over the ONNX node's axes: an attribute when they are known at
// import time, the Dynamic* form reading them at run time otherwise.
class Reducer {
 public:
  Reducer(const onnx::NodeProto& node, ImportContext& ctx,
          std::optional<std::vector<int64_t>> axes, ValuePtr runtime_axes)
      : ctx_(ctx), axes_(std::move(axes)),
        runtime_axes_(std::move(runtime_axes)),
        noop_(AttrInt(node, "noop_with_empty_axes", 0) != 0) {}

  absl::StatusOr<ValuePtr> operator()(const std::string& op,
                                      absl::string_view hint, ValuePtr x,
                                      bool keepdims) {
    if (runtime_axes_ != nullptr) {
      return ctx_.em().Emit1(absl::StrCat("Dynamic", op), hint,
                             {x, runtime_axes_},
                             {{"keepdims", MakeBoolAttr(keepdims)},
                              {"noop_with_empty_axes", MakeBoolAttr(noop_)}});
    }
    return ctx_.em().Emit1(
        op, hint, {x},
        {{"axes", MakeIntListAttr(axes_.value_or(std::vector<int64_t>{}))},
         {"keepdims", MakeBoolAttr(keepdims)}});
  }

 private:
  ImportContext& ctx_;
  std::optional<std::vector<int64_t>> axes_;
  ValuePtr runtime_axes_;
  bool noop_;
};

absl::Status ConvertReduce(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  // Axes are an input for ReduceSum from opset 13 and for the others from
  // 18, an attribute before; accept whichever the node has.
  std::optional<std::vector<int64_t>> axes;
  ValuePtr runtime_axes;
  if (ctx.IsRuntime(node, 1)) {
    ASSIGN_OR_RETURN(runtime_axes, ctx.ParamInput(node, 1));
  } else {
    ASSIGN_OR_RETURN(axes, ctx.ConstInts(node, 1, "axes"));
    if (!axes) axes = AttrInts(node, "axes");
  }
  const bool keepdims = AttrInt(node, "keepdims", 1) != 0;
  if (runtime_axes == nullptr && (!axes || axes->empty()) &&
      AttrInt(node, "noop_with_empty_axes", 0) != 0) {
    ASSIGN_OR_RETURN(ValuePtr y,
                     ctx.em().Emit1("Identity", ctx.Hint(node), {x}));
    return ctx.SetOutput(node, 0, y);
  }
  std::string op = node.op_type();
  Reducer reduce(node, ctx, axes, runtime_axes);
  ValuePtr y;
  if (op == "ReduceSumSquare" || op == "ReduceL2" || op == "ReduceL1") {
    // Sum of x*x (then its square root for L2) or of |x|.
    const bool l1 = op == "ReduceL1";
    ASSIGN_OR_RETURN(
        ValuePtr t,
        l1 ? ctx.em().Emit1("Abs", ctx.Hint(node, "abs"), {x})
           : ctx.em().Emit1("Mul", ctx.Hint(node, "square"), {x, x}));
    const bool l2 = op == "ReduceL2";
    ASSIGN_OR_RETURN(y, reduce("ReduceSum",
                               l2 ? ctx.Hint(node, "sum") : ctx.Hint(node), t,
                               keepdims));
    if (l2) {
      ASSIGN_OR_RETURN(y, ctx.em().Emit1("Sqrt", ctx.Hint(node), {y}));
    }
  } else if (op == "ReduceLogSum") {
    ASSIGN_OR_RETURN(y, reduce("ReduceSum", ctx.Hint(node, "sum"), x, keepdims));
    ASSIGN_OR_RETURN(y, ctx.em().Emit1("Log", ctx.Hint(node), {y}));
  } else if (op == "ReduceLogSumExp") {
    // m + log(sum(exp(x - m))), m = max(x) over the axes: no overflow.
    ASSIGN_OR_RETURN(ValuePtr m,
                     reduce("ReduceMax", ctx.Hint(node, "max_keep"), x, true));
    ASSIGN_OR_RETURN(ValuePtr d,
                     ctx.em().Emit1("Sub", ctx.Hint(node, "shifted"), {x, m}));
    ASSIGN_OR_RETURN(d, ctx.em().Emit1("Exp", ctx.Hint(node, "exp"), {d}));
    ASSIGN_OR_RETURN(d, reduce("ReduceSum", ctx.Hint(node, "sum"), d, keepdims));
    ASSIGN_OR_RETURN(d, ctx.em().Emit1("Log", ctx.Hint(node, "log"), {d}));
    ASSIGN_OR_RETURN(m, reduce("ReduceMax", ctx.Hint(node, "max"), x, keepdims));
    ASSIGN_OR_RETURN(y, ctx.em().Emit1("Add", ctx.Hint(node), {d, m}));
  } else {  // ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd
    ASSIGN_OR_RETURN(y, reduce(op, ctx.Hint(node), x, keepdims));
  }
  return ctx.SetOutput(node, 0, y);
}

}  // namespace

void AddNnOps(OnnxOpTable* table) {
  (*table)["MatMul"] = {ConvertMatMul, nullptr};
  (*table)["Gemm"] = {ConvertGemm, nullptr};
  (*table)["Softmax"] = {ConvertSoftmax, nullptr};
  (*table)["LogSoftmax"] = {ConvertSoftmax, nullptr};
  (*table)["LayerNormalization"] = {ConvertLayerNorm, nullptr};
  (*table)["BatchNormalization"] = {ConvertBatchNorm, CheckBatchNorm};
  (*table)["Conv"] = {ConvertConv, CheckWindow};
  (*table)["MaxPool"] = {ConvertPool, CheckWindow};
  (*table)["AveragePool"] = {ConvertPool, CheckWindow};
  (*table)["GlobalAveragePool"] = {ConvertGlobalPool, nullptr};
  (*table)["GlobalMaxPool"] = {ConvertGlobalPool, nullptr};
  for (const char* op :
       {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
        "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum",
        "ReduceLogSumExp"}) {
    (*table)[op] = {ConvertReduce, nullptr};
  }
}

}  // namespace sluice
