// ONNX elementwise ops -> sluice: unary math, binary arithmetic and
// comparisons (NumPy broadcasting on both sides), logic on bools, Where,
// Cast, Clip and LeakyRelu.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "onnx/import_context.h"
#include "onnx/onnx_tensor.h"

namespace sluice {
namespace {

const absl::flat_hash_map<std::string, std::string>& UnaryOps() {
  static const auto* ops = new absl::flat_hash_map<std::string, std::string>{
      {"Relu", "Relu"},         {"Neg", "Neg"},         {"Abs", "Abs"},
      {"Exp", "Exp"},           {"Log", "Log"},         {"Sqrt", "Sqrt"},
      {"Tanh", "Tanh"},         {"Sigmoid", "Sigmoid"}, {"Erf", "Erf"},
      {"Identity", "Identity"}};
  return *ops;
}

const absl::flat_hash_map<std::string, std::string>& BinaryOps() {
  static const auto* ops = new absl::flat_hash_map<std::string, std::string>{
      {"Add", "Add"},   {"Sub", "Sub"},        {"Mul", "Mul"},
      {"Div", "Div"},   {"Pow", "Pow"},        {"Equal", "Equal"},
      {"Less", "Less"}, {"Greater", "Greater"}, {"Mod", "Mod"}};
  return *ops;
}

absl::Status ConvertUnary(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1(UnaryOps().at(node.op_type()),
                                              ctx.Hint(node), {x}));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertBinary(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr y, ctx.Input(node, 1));
  std::string op = BinaryOps().at(node.op_type());
  if (op == "Mod" && AttrInt(node, "fmod", 0) != 0) op = "FMod";
  if (node.op_type() == "Pow") {
    // ONNX lets the exponent have its own type; sluice's Pow does not.
    ASSIGN_OR_RETURN(y,
                     EmitCastTo(ctx, ctx.Hint(node, "exponent"), y, x->dtype));
  }
  ASSIGN_OR_RETURN(ValuePtr z, ctx.em().Emit1(op, ctx.Hint(node), {x, y}));
  return ctx.SetOutput(node, 0, z);
}

// Max, Min, Sum: variadic, folded left to right.
absl::Status ConvertVariadic(const onnx::NodeProto& node, ImportContext& ctx) {
  const std::string op = node.op_type() == "Max"   ? "Maximum"
                         : node.op_type() == "Min" ? "Minimum"
                                                   : "Add";
  ASSIGN_OR_RETURN(ValuePtr acc, ctx.Input(node, 0));
  if (node.input_size() == 1) {
    ASSIGN_OR_RETURN(acc, ctx.em().Emit1("Identity", ctx.Hint(node), {acc}));
  }
  for (int i = 1; i < node.input_size(); ++i) {
    ASSIGN_OR_RETURN(ValuePtr next, ctx.Input(node, i));
    std::string hint = i + 1 == node.input_size()
                           ? ctx.Hint(node)
                           : ctx.Hint(node, absl::StrCat("step", i));
    ASSIGN_OR_RETURN(acc, ctx.em().Emit1(op, hint, {acc, next}));
  }
  return ctx.SetOutput(node, 0, acc);
}

// x <= y is (x > y) == false; x >= y is (x < y) == false.
absl::Status ConvertOrEqual(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr y, ctx.Input(node, 1));
  const std::string op = node.op_type() == "LessOrEqual" ? "Greater" : "Less";
  ASSIGN_OR_RETURN(ValuePtr strict,
                   ctx.em().Emit1(op, ctx.Hint(node, "strict"), {x, y}));
  ASSIGN_OR_RETURN(ValuePtr z,
                   ctx.em().Emit1("Equal", ctx.Hint(node),
                                  {strict, Scalar(ctx, DT_BOOL, 0,
                                                  ctx.Hint(node, "false"))}));
  return ctx.SetOutput(node, 0, z);
}

// Bool logic through Equal and Where.
absl::Status ConvertLogic(const onnx::NodeProto& node, ImportContext& ctx) {
  const std::string& op = node.op_type();
  ASSIGN_OR_RETURN(ValuePtr a, ctx.Input(node, 0));
  ValuePtr f = Scalar(ctx, DT_BOOL, 0, ctx.Hint(node, "false"));
  ValuePtr z;
  if (op == "Not") {
    ASSIGN_OR_RETURN(z, ctx.em().Emit1("Equal", ctx.Hint(node), {a, f}));
    return ctx.SetOutput(node, 0, z);
  }
  ASSIGN_OR_RETURN(ValuePtr b, ctx.Input(node, 1));
  if (op == "And") {
    ASSIGN_OR_RETURN(z, ctx.em().Emit1("Where", ctx.Hint(node), {a, b, f}));
  } else if (op == "Or") {
    ValuePtr t = Scalar(ctx, DT_BOOL, 1, ctx.Hint(node, "true"));
    ASSIGN_OR_RETURN(z, ctx.em().Emit1("Where", ctx.Hint(node), {a, t, b}));
  } else {  // Xor
    ASSIGN_OR_RETURN(ValuePtr eq,
                     ctx.em().Emit1("Equal", ctx.Hint(node, "eq"), {a, b}));
    ASSIGN_OR_RETURN(z, ctx.em().Emit1("Equal", ctx.Hint(node), {eq, f}));
  }
  return ctx.SetOutput(node, 0, z);
}

// IsNaN(x) = !(x == x): NaN is the only value not equal to itself.
absl::Status ConvertIsNaN(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr self_equal,
                   ctx.em().Emit1("Equal", ctx.Hint(node, "self_equal"), {x, x}));
  ASSIGN_OR_RETURN(
      ValuePtr z,
      ctx.em().Emit1("Equal", ctx.Hint(node),
                     {self_equal, Scalar(ctx, DT_BOOL, 0, ctx.Hint(node, "false"))}));
  return ctx.SetOutput(node, 0, z);
}

absl::Status ConvertReciprocal(const onnx::NodeProto& node,
                               ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("Div", ctx.Hint(node),
                     {Scalar(ctx, x->dtype, 1, ctx.Hint(node, "one")), x}));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertWhere(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr c, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr y, ctx.Input(node, 2));
  ASSIGN_OR_RETURN(ValuePtr z,
                   ctx.em().Emit1("Where", ctx.Hint(node), {c, x, y}));
  return ctx.SetOutput(node, 0, z);
}

std::string CheckCast(const onnx::NodeProto& node, int opset) {
  int64_t to = AttrInt(node, "to", 0);
  absl::StatusOr<DataType> dt = DataTypeFromOnnx(static_cast<int32_t>(to));
  if (!dt.ok()) return absl::StrCat("cast to ", OnnxTypeName(to));
  return "";
}

absl::Status ConvertCast(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  DataType to;
  if (node.op_type() == "CastLike") {
    ASSIGN_OR_RETURN(ValuePtr like, ctx.Input(node, 1));
    to = like->dtype;
  } else {
    ASSIGN_OR_RETURN(
        to, DataTypeFromOnnx(static_cast<int32_t>(AttrInt(node, "to", 0))));
  }
  // Even a no-op Cast gets a node, so that the output has its own name.
  // saturate (opset 19+, default 1) and round_mode (opset 24+, default "up")
  // only change casts to the float8 types.
  const bool saturate = AttrInt(node, "saturate", 1) != 0;
  const std::string round_mode = AttrString(node, "round_mode", "up");
  ASSIGN_OR_RETURN(ValuePtr y,
                   ctx.em().Emit1("Cast", ctx.Hint(node), {x},
                                  {{"DstT", MakeTypeAttr(to)},
                                   {"saturate", MakeBoolAttr(saturate)},
                                   {"round_mode", MakeStringAttr(round_mode)}}));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertClip(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr y, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr lo, ctx.OptionalInput(node, 1));
  ASSIGN_OR_RETURN(ValuePtr hi, ctx.OptionalInput(node, 2));
  if (lo == nullptr && hi == nullptr) {
    ASSIGN_OR_RETURN(y, ctx.em().Emit1("Identity", ctx.Hint(node), {y}));
  }
  if (lo != nullptr) {
    ASSIGN_OR_RETURN(y, ctx.em().Emit1("Maximum",
                                       hi == nullptr ? ctx.Hint(node)
                                                     : ctx.Hint(node, "min"),
                                       {y, lo}));
  }
  if (hi != nullptr) {
    ASSIGN_OR_RETURN(y, ctx.em().Emit1("Minimum", ctx.Hint(node), {y, hi}));
  }
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertLeakyRelu(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  float alpha = AttrFloat(node, "alpha", 0.01f);
  ValuePtr zero = Scalar(ctx, x->dtype, 0, ctx.Hint(node, "zero"));
  ValuePtr a = Scalar(ctx, x->dtype, alpha, ctx.Hint(node, "alpha"));
  ASSIGN_OR_RETURN(ValuePtr pos,
                   ctx.em().Emit1("Greater", ctx.Hint(node, "pos"), {x, zero}));
  ASSIGN_OR_RETURN(ValuePtr scaled,
                   ctx.em().Emit1("Mul", ctx.Hint(node, "scaled"), {x, a}));
  ASSIGN_OR_RETURN(ValuePtr y,
                   ctx.em().Emit1("Where", ctx.Hint(node), {pos, x, scaled}));
  return ctx.SetOutput(node, 0, y);
}

// Dropout at inference. Without a mask output or a training_mode input it
// is Identity; otherwise sluice's Dropout, which checks at run time that
// training_mode is false or the ratio 0 (versions before 12 have the ratio
// as an attribute and no training_mode).
absl::Status ConvertDropout(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  const bool mask = node.output_size() > 1 && !node.output(1).empty();
  ASSIGN_OR_RETURN(ValuePtr ratio, ctx.OptionalInput(node, 1));
  ASSIGN_OR_RETURN(ValuePtr training, ctx.OptionalInput(node, 2));
  if (!mask && training == nullptr) {
    ASSIGN_OR_RETURN(ValuePtr y,
                     ctx.em().Emit1("Identity", ctx.Hint(node), {x}));
    return ctx.SetOutput(node, 0, y);
  }
  if (ratio == nullptr) {
    ratio = Scalar(ctx, DT_FLOAT, AttrFloat(node, "ratio", 0.5f),
                   ctx.Hint(node, "ratio"));
  }
  if (training == nullptr) {
    training = Scalar(ctx, DT_BOOL, 0, ctx.Hint(node, "training_mode"));
  }
  ASSIGN_OR_RETURN(std::vector<ValuePtr> out,
                   ctx.em().Emit("Dropout", ctx.Hint(node),
                                 {x, ratio, training}));
  RETURN_IF_ERROR(ctx.SetOutput(node, 0, out[0]));
  return ctx.SetOutput(node, 1, out[1]);
}

}  // namespace

void AddElementwiseOps(OnnxOpTable* table) {
  for (const auto& [onnx_op, unused] : UnaryOps()) {
    (*table)[onnx_op] = {ConvertUnary, nullptr};
  }
  (*table)["Dropout"] = {ConvertDropout, nullptr};
  for (const auto& [onnx_op, unused] : BinaryOps()) {
    (*table)[onnx_op] = {ConvertBinary, nullptr};
  }
  for (const char* op : {"Max", "Min", "Sum"}) {
    (*table)[op] = {ConvertVariadic, nullptr};
  }
  (*table)["LessOrEqual"] = {ConvertOrEqual, nullptr};
  (*table)["GreaterOrEqual"] = {ConvertOrEqual, nullptr};
  for (const char* op : {"Not", "And", "Or", "Xor"}) {
    (*table)[op] = {ConvertLogic, nullptr};
  }
  (*table)["Reciprocal"] = {ConvertReciprocal, nullptr};
  (*table)["IsNaN"] = {ConvertIsNaN, nullptr};
  (*table)["Where"] = {ConvertWhere, nullptr};
  (*table)["Cast"] = {ConvertCast, CheckCast};
  (*table)["CastLike"] = {ConvertCast, nullptr};
  (*table)["Clip"] = {ConvertClip, nullptr};
  (*table)["LeakyRelu"] = {ConvertLeakyRelu, nullptr};
}

}  // namespace sluice
