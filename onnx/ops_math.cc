// ONNX unary math and activations -> sluice: the trigonometric and
// hyperbolic functions, rounding, Sign, the activations with a sluice kernel
// each (Softplus, Softsign, Mish, HardSwish; Elu, Selu, Celu, HardSigmoid,
// ThresholdedRelu with their float attributes; Gelu), and the ones lowered
// to existing ops: IsInf (comparisons with +-inf) and PRelu (Where); and
// ArgMax/ArgMin, Trilu, CumSum, CumProd and Hardmax (one-hot of ArgMax).
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "onnx/import_context.h"
#include "onnx/onnx_tensor.h"

namespace sluice {
namespace {

// ONNX op -> sluice op, with the float attributes passed on (the sluice
// schema has the same names and defaults).
struct MathOp {
  const char* sluice_op;
  std::vector<const char*> float_attrs;
};

const absl::flat_hash_map<std::string, MathOp>& MathOps() {
  static const auto* ops = new absl::flat_hash_map<std::string, MathOp>{
      {"Sin", {"Sin", {}}},
      {"Cos", {"Cos", {}}},
      {"Tan", {"Tan", {}}},
      {"Asin", {"Asin", {}}},
      {"Acos", {"Acos", {}}},
      {"Atan", {"Atan", {}}},
      {"Sinh", {"Sinh", {}}},
      {"Cosh", {"Cosh", {}}},
      {"Asinh", {"Asinh", {}}},
      {"Acosh", {"Acosh", {}}},
      {"Atanh", {"Atanh", {}}},
      {"Floor", {"Floor", {}}},
      {"Ceil", {"Ceil", {}}},
      {"Round", {"Round", {}}},
      {"Sign", {"Sign", {}}},
      {"Softplus", {"Softplus", {}}},
      {"Softsign", {"Softsign", {}}},
      {"Mish", {"Mish", {}}},
      {"HardSwish", {"HardSwish", {}}},
      {"HardSigmoid", {"HardSigmoid", {"alpha", "beta"}}},
      {"Elu", {"Elu", {"alpha"}}},
      {"Selu", {"Selu", {"alpha", "gamma"}}},
      {"Celu", {"Celu", {"alpha"}}},
      {"ThresholdedRelu", {"ThresholdedRelu", {"alpha"}}},
  };
  return *ops;
}

absl::Status ConvertMath(const onnx::NodeProto& node, ImportContext& ctx) {
  const MathOp& op = MathOps().at(node.op_type());
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  AttrList attrs;
  for (const char* name : op.float_attrs) {
    if (FindAttr(node, name) != nullptr) {
      attrs[name] = MakeFloatAttr(AttrFloat(node, name, 0));
    }
  }
  ASSIGN_OR_RETURN(ValuePtr y,
                   ctx.em().Emit1(op.sluice_op, ctx.Hint(node), {x}, attrs));
  return ctx.SetOutput(node, 0, y);
}

std::string CheckGelu(const onnx::NodeProto& node, int opset) {
  const std::string mode = AttrString(node, "approximate", "none");
  if (mode != "none" && mode != "tanh") {
    return absl::StrCat("approximate \"", mode, "\"");
  }
  return "";
}

absl::Status ConvertGelu(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("Gelu", ctx.Hint(node), {x},
                     {{"approximate", MakeStringAttr(AttrString(
                                          node, "approximate", "none"))}}));
  return ctx.SetOutput(node, 0, y);
}

// IsInf: x == +inf and/or x == -inf, as detect_positive/negative ask.
absl::Status ConvertIsInf(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  const bool pos = AttrInt(node, "detect_positive", 1) != 0;
  const bool neg = AttrInt(node, "detect_negative", 1) != 0;
  const double inf = std::numeric_limits<double>::infinity();
  ValuePtr y;
  if (pos && neg) {
    ASSIGN_OR_RETURN(ValuePtr a,
                     ctx.em().Emit1("Abs", ctx.Hint(node, "abs"), {x}));
    ASSIGN_OR_RETURN(
        y, ctx.em().Emit1("Equal", ctx.Hint(node),
                          {a, ctx.em().AddConstant(ScalarTensor(x->dtype, inf),
                                                   ctx.Hint(node, "inf"))}));
  } else {
    // Neither: all false, as x == NaN is.
    const double v = pos   ? inf
                     : neg ? -inf
                           : std::numeric_limits<double>::quiet_NaN();
    ASSIGN_OR_RETURN(
        y, ctx.em().Emit1("Equal", ctx.Hint(node),
                          {x, ctx.em().AddConstant(ScalarTensor(x->dtype, v),
                                                   ctx.Hint(node, "inf"))}));
  }
  return ctx.SetOutput(node, 0, y);
}

// PRelu(x, slope) = x < 0 ? slope * x : x, slope broadcast to x.
absl::Status ConvertPRelu(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr slope, ctx.Input(node, 1));
  ValuePtr zero =
      ctx.em().AddConstant(ScalarTensor(x->dtype, 0), ctx.Hint(node, "zero"));
  ASSIGN_OR_RETURN(ValuePtr neg,
                   ctx.em().Emit1("Less", ctx.Hint(node, "neg"), {x, zero}));
  ASSIGN_OR_RETURN(ValuePtr scaled,
                   ctx.em().Emit1("Mul", ctx.Hint(node, "scaled"), {x, slope}));
  ASSIGN_OR_RETURN(ValuePtr y,
                   ctx.em().Emit1("Where", ctx.Hint(node), {neg, scaled, x}));
  return ctx.SetOutput(node, 0, y);
}

// ArgMax, ArgMin: the same attributes in sluice (axis 0, keepdims 1).
absl::Status ConvertArgReduce(const onnx::NodeProto& node,
                              ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1(
          node.op_type(), ctx.Hint(node), {x},
          {{"axis", MakeIntAttr(AttrInt(node, "axis", 0))},
           {"keepdims", MakeBoolAttr(AttrInt(node, "keepdims", 1) != 0)},
           {"select_last_index",
            MakeBoolAttr(AttrInt(node, "select_last_index", 0) != 0)}}));
  return ctx.SetOutput(node, 0, y);
}

// Trilu(x, k = 0): k is a runtime input in sluice too.
absl::Status ConvertTrilu(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr k, ctx.OptionalInput(node, 1));
  if (k == nullptr) {
    k = ctx.em().AddConstant(ScalarTensor(DT_INT64, 0), ctx.Hint(node, "k"));
  }
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("Trilu", ctx.Hint(node), {x, k},
                     {{"upper", MakeBoolAttr(AttrInt(node, "upper", 1) != 0)}}));
  return ctx.SetOutput(node, 0, y);
}

// CumSum, CumProd: the same ops in sluice, the axis a runtime input.
absl::Status ConvertCumulative(const onnx::NodeProto& node,
                               ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr axis, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1(
          node.op_type(), ctx.Hint(node), {x, axis},
          {{"exclusive", MakeBoolAttr(AttrInt(node, "exclusive", 0) != 0)},
           {"reverse", MakeBoolAttr(AttrInt(node, "reverse", 0) != 0)}}));
  return ctx.SetOutput(node, 0, y);
}

// Hardmax(x, axis): 1 where x has the first maximum along axis, else 0:
// Cast(Equal(iota along axis, ArgMax(x, axis, keepdims))).
absl::Status ConvertHardmax(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  if (x->shape.unknown_rank()) {
    return absl::UnimplementedError("needs the input's rank known at import");
  }
  const int rank = x->shape.rank();
  int64_t axis = AttrInt(node, "axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || x->shape.dim(axis) < 0) {
    return absl::UnimplementedError(
        "needs the size of its axis known at import");
  }
  const int64_t n = x->shape.dim(axis);
  std::vector<int64_t> iota_shape(rank, 1);
  iota_shape[axis] = n;
  ASSIGN_OR_RETURN(
      ValuePtr iota_v,
      ctx.em().CreateConstant(
          NodeLabel(node), DT_INT64, Shape(iota_shape),
          [&](Tensor& iota) {
            for (int64_t i = 0; i < n; ++i) iota.data<int64_t>()[i] = i;
          },
          ctx.Hint(node, "iota")));
  ASSIGN_OR_RETURN(ValuePtr idx,
                   ctx.em().Emit1("ArgMax", ctx.Hint(node, "argmax"), {x},
                                  {{"axis", MakeIntAttr(axis)},
                                   {"keepdims", MakeBoolAttr(true)}}));
  ASSIGN_OR_RETURN(ValuePtr hot, ctx.em().Emit1("Equal", ctx.Hint(node, "hot"),
                                                {iota_v, idx}));
  ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1(
                                   "Cast", ctx.Hint(node), {hot},
                                   {{"DstT", MakeTypeAttr(x->dtype)}}));
  return ctx.SetOutput(node, 0, y);
}

}  // namespace

void AddMathOps(OnnxOpTable* table) {
  for (const auto& [onnx_op, unused] : MathOps()) {
    (*table)[onnx_op] = {ConvertMath, nullptr};
  }
  (*table)["Gelu"] = {ConvertGelu, CheckGelu};
  (*table)["IsInf"] = {ConvertIsInf, nullptr};
  (*table)["PRelu"] = {ConvertPRelu, nullptr};
  (*table)["ArgMax"] = {ConvertArgReduce, nullptr};
  (*table)["ArgMin"] = {ConvertArgReduce, nullptr};
  (*table)["Trilu"] = {ConvertTrilu, nullptr};
  (*table)["CumSum"] = {ConvertCumulative, nullptr};
  (*table)["CumProd"] = {ConvertCumulative, nullptr};
  (*table)["Hardmax"] = {ConvertHardmax, nullptr};
}

}  // namespace sluice
