// ONNX bit-level ops -> sluice: BitShift, BitwiseAnd/Or/Xor/Not (the same
// ops) and BitCast (its `to` an ONNX element type).
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "onnx/import_context.h"
#include "onnx/onnx_tensor.h"

namespace sluice {
namespace {

std::string CheckBitShift(const onnx::NodeProto& node, int opset) {
  const std::string direction = AttrString(node, "direction", "");
  if (direction != "LEFT" && direction != "RIGHT") {
    return absl::StrCat("direction \"", direction,
                        "\" (must be LEFT or RIGHT)");
  }
  return "";
}

absl::Status ConvertBitShift(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr y, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(
      ValuePtr z,
      ctx.em().Emit1("BitShift", ctx.Hint(node), {x, y},
                     {{"direction",
                       MakeStringAttr(AttrString(node, "direction", ""))}}));
  return ctx.SetOutput(node, 0, z);
}

// BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot: same names in sluice.
absl::Status ConvertBitwise(const onnx::NodeProto& node, ImportContext& ctx) {
  std::vector<ValuePtr> inputs;
  for (int i = 0; i < node.input_size(); ++i) {
    ASSIGN_OR_RETURN(ValuePtr v, ctx.Input(node, i));
    inputs.push_back(std::move(v));
  }
  ASSIGN_OR_RETURN(ValuePtr y,
                   ctx.em().Emit1(node.op_type(), ctx.Hint(node), inputs));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertBitCast(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  if (FindAttr(node, "to") == nullptr) {
    return absl::InvalidArgumentError("the `to` attribute is missing");
  }
  ASSIGN_OR_RETURN(DataType to,
                   DataTypeFromOnnx(static_cast<int32_t>(AttrInt(node, "to", 0))));
  ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1("BitCast", ctx.Hint(node), {x},
                                              {{"DstT", MakeTypeAttr(to)}}));
  return ctx.SetOutput(node, 0, y);
}

}  // namespace

void AddBitwiseOps(OnnxOpTable* table) {
  (*table)["BitShift"] = {ConvertBitShift, CheckBitShift};
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor",
                         "BitwiseNot"}) {
    (*table)[op] = {ConvertBitwise, nullptr};
  }
  (*table)["BitCast"] = {ConvertBitCast, nullptr};
}

}  // namespace sluice
