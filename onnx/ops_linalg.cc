// ONNX Einsum and Det -> the sluice ops of the same names.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "onnx/import_context.h"

namespace sluice {
namespace {

absl::Status ConvertEinsum(const onnx::NodeProto& node, ImportContext& ctx) {
  std::vector<ValuePtr> inputs;
  for (int i = 0; i < node.input_size(); ++i) {
    ASSIGN_OR_RETURN(ValuePtr v, ctx.Input(node, i));
    inputs.push_back(std::move(v));
  }
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1(
          "Einsum", ctx.Hint(node), inputs,
          {{"N", MakeIntAttr(static_cast<int64_t>(inputs.size()))},
           {"equation", MakeStringAttr(AttrString(node, "equation", ""))}}));
  return ctx.SetOutput(node, 0, y);
}

std::string CheckEinsum(const onnx::NodeProto& node, int opset) {
  if (FindAttr(node, "equation") == nullptr) return "no equation attribute";
  if (node.input_size() == 0) return "no inputs";
  return "";
}

absl::Status ConvertDet(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1("Det", ctx.Hint(node), {x}));
  return ctx.SetOutput(node, 0, y);
}

}  // namespace

void AddLinalgOps(OnnxOpTable* table) {
  (*table)["Einsum"] = {ConvertEinsum, CheckEinsum};
  (*table)["Det"] = {ConvertDet, nullptr};
}

}  // namespace sluice
