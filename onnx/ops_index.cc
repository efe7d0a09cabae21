// ONNX indexing ops with runtime indices -> sluice's GatherElements,
// ScatterElements, GatherND and ScatterND. GatherElements whose data and
// indices are both constants still folds at import (ops_shape.cc's handler),
// so that shape subgraphs stay constant.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "onnx/import_context.h"

namespace sluice {
namespace {

ConvertFn& FoldingGatherElements() {
  static ConvertFn fn = nullptr;
  return fn;
}

absl::Status ConvertGatherElementsRuntime(const onnx::NodeProto& node,
                                          ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr data, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr indices, ctx.Input(node, 1));
  if (data->constant && indices->constant &&
      FoldingGatherElements() != nullptr) {
    return FoldingGatherElements()(node, ctx);
  }
  ASSIGN_OR_RETURN(ValuePtr y,
                   ctx.em().Emit1("GatherElements", ctx.Hint(node),
                                  {data, indices},
                                  {{"axis", MakeIntAttr(AttrInt(node, "axis",
                                                                0))}}));
  return ctx.SetOutput(node, 0, y);
}

std::string CheckReduction(const onnx::NodeProto& node, int opset) {
  const std::string r = AttrString(node, "reduction", "none");
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min") {
    return absl::StrCat("reduction \"", r, "\"");
  }
  return "";
}

absl::Status ConvertScatter(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr data, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr indices, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr updates, ctx.Input(node, 2));
  AttrList attrs = {
      {"reduction", MakeStringAttr(AttrString(node, "reduction", "none"))}};
  const bool elements = node.op_type() == "ScatterElements";
  if (elements) attrs["axis"] = MakeIntAttr(AttrInt(node, "axis", 0));
  ASSIGN_OR_RETURN(ValuePtr y,
                   ctx.em().Emit1(elements ? "ScatterElements" : "ScatterND",
                                  ctx.Hint(node), {data, indices, updates},
                                  attrs));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertGatherNd(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr data, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr indices, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("GatherND", ctx.Hint(node), {data, indices},
                     {{"batch_dims",
                       MakeIntAttr(AttrInt(node, "batch_dims", 0))}}));
  return ctx.SetOutput(node, 0, y);
}

}  // namespace

void AddIndexOps(OnnxOpTable* table) {
  // REQUIRES: AddShapeOps ran (its GatherElements folds constants).
  auto it = table->find("GatherElements");
  if (it != table->end()) FoldingGatherElements() = it->second.convert;
  (*table)["GatherElements"] = {ConvertGatherElementsRuntime, nullptr};
  (*table)["ScatterElements"] = {ConvertScatter, CheckReduction};
  (*table)["ScatterND"] = {ConvertScatter, CheckReduction};
  (*table)["GatherND"] = {ConvertGatherNd, nullptr};
}

}  // namespace sluice
