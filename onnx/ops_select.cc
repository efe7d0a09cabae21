// ONNX selection ops -> sluice ops of the same names: TopK (k an input from
// version 10, an attribute before), Unique, NonZero, Compress, OneHot,
// EyeLike and ReverseSequence; and the deprecated Scatter (ScatterElements). Unique's and Compress's optional axis becomes
// sluice's flatten + axis; EyeLike's optional dtype its DstT.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "onnx/import_context.h"
#include "onnx/onnx_tensor.h"

namespace sluice {
namespace {

absl::Status ConvertTopK(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ValuePtr k;
  if (ctx.opset() < 10 || node.input_size() < 2) {  // version 1: attribute
    k = ctx.em().AddConstant(Int64Vector({AttrInt(node, "k", 0)}),
                             ctx.Hint(node, "k"));
  } else {
    ASSIGN_OR_RETURN(k, ctx.ParamInput(node, 1));
  }
  ASSIGN_OR_RETURN(
      std::vector<ValuePtr> out,
      ctx.em().Emit("TopK", ctx.Hint(node), {x, k},
                    {{"axis", MakeIntAttr(AttrInt(node, "axis", -1))},
                     {"largest", MakeBoolAttr(AttrInt(node, "largest", 1) != 0)},
                     {"sorted", MakeBoolAttr(AttrInt(node, "sorted", 1) != 0)}}));
  RETURN_IF_ERROR(ctx.SetOutput(node, 0, out[0]));
  return ctx.SetOutput(node, 1, out[1]);
}

// Unique and Compress: no axis attribute means the input flattened.
AttrList AxisAttrs(const onnx::NodeProto& node) {
  const bool has_axis = FindAttr(node, "axis") != nullptr;
  return {{"flatten", MakeBoolAttr(!has_axis)},
          {"axis", MakeIntAttr(AttrInt(node, "axis", 0))}};
}

absl::Status ConvertUnique(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  AttrList attrs = AxisAttrs(node);
  attrs["sorted"] = MakeBoolAttr(AttrInt(node, "sorted", 1) != 0);
  ASSIGN_OR_RETURN(std::vector<ValuePtr> out,
                   ctx.em().Emit("Unique", ctx.Hint(node), {x}, attrs));
  for (int i = 0; i < 4; ++i) RETURN_IF_ERROR(ctx.SetOutput(node, i, out[i]));
  return absl::OkStatus();
}

absl::Status ConvertCompress(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr cond, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1("Compress", ctx.Hint(node),
                                              {x, cond}, AxisAttrs(node)));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertNonZero(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr y, ctx.em().Emit1("NonZero", ctx.Hint(node), {x}));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertOneHot(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr indices, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr depth, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr values, ctx.Input(node, 2));
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("OneHot", ctx.Hint(node), {indices, depth, values},
                     {{"axis", MakeIntAttr(AttrInt(node, "axis", -1))}}));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertEyeLike(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  DataType dst = x->dtype;
  if (FindAttr(node, "dtype") != nullptr) {
    ASSIGN_OR_RETURN(dst, DataTypeFromOnnx(static_cast<int32_t>(
                              AttrInt(node, "dtype", 0))));
  }
  ASSIGN_OR_RETURN(ValuePtr y,
                   ctx.em().Emit1("EyeLike", ctx.Hint(node), {x},
                                  {{"DstT", MakeTypeAttr(dst)},
                                   {"k", MakeIntAttr(AttrInt(node, "k", 0))}}));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertReverseSequence(const onnx::NodeProto& node,
                                    ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr lens, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1(
          "ReverseSequence", ctx.Hint(node), {x, lens},
          {{"batch_axis", MakeIntAttr(AttrInt(node, "batch_axis", 1))},
           {"time_axis", MakeIntAttr(AttrInt(node, "time_axis", 0))}}));
  return ctx.SetOutput(node, 0, y);
}

// Scatter (versions 9 and 10, deprecated): ScatterElements without a
// reduction.
absl::Status ConvertScatterV9(const onnx::NodeProto& node,
                              ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr data, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr indices, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr updates, ctx.Input(node, 2));
  ASSIGN_OR_RETURN(
      ValuePtr y,
      ctx.em().Emit1("ScatterElements", ctx.Hint(node),
                     {data, indices, updates},
                     {{"axis", MakeIntAttr(AttrInt(node, "axis", 0))},
                      {"reduction", MakeStringAttr("none")}}));
  return ctx.SetOutput(node, 0, y);
}

}  // namespace

void AddSelectOps(OnnxOpTable* table) {
  (*table)["Scatter"] = {ConvertScatterV9, nullptr};
  (*table)["TopK"] = {ConvertTopK, nullptr};
  (*table)["Unique"] = {ConvertUnique, nullptr};
  (*table)["Compress"] = {ConvertCompress, nullptr};
  (*table)["NonZero"] = {ConvertNonZero, nullptr};
  (*table)["OneHot"] = {ConvertOneHot, nullptr};
  (*table)["EyeLike"] = {ConvertEyeLike, nullptr};
  (*table)["ReverseSequence"] = {ConvertReverseSequence, nullptr};
}

}  // namespace sluice
