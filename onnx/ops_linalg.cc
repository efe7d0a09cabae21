// ONNX Einsum and Det -> the sluice ops of the same names;
// MeanVarianceNormalization lowered to reductions, as ONNX's function body
// defines it.
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

// MeanVarianceNormalization: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9),
// the means over `axes` (default [0, 2, 3]).
absl::Status ConvertMvn(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  const std::vector<int64_t> axes =
      AttrInts(node, "axes").value_or(std::vector<int64_t>{0, 2, 3});
  GraphEmitter& em = ctx.em();
  const AttrList mean_attrs = {{"axes", MakeIntListAttr(axes)},
                               {"keepdims", MakeBoolAttr(true)}};
  ASSIGN_OR_RETURN(ValuePtr mean,
                   em.Emit1("ReduceMean", ctx.Hint(node, "mean"), {x},
                            mean_attrs));
  ASSIGN_OR_RETURN(ValuePtr x2, em.Emit1("Mul", ctx.Hint(node, "x2"), {x, x}));
  ASSIGN_OR_RETURN(ValuePtr mean_x2, em.Emit1("ReduceMean",
                                              ctx.Hint(node, "mean_x2"), {x2},
                                              mean_attrs));
  ASSIGN_OR_RETURN(ValuePtr mean2, em.Emit1("Mul", ctx.Hint(node, "mean2"),
                                            {mean, mean}));
  ASSIGN_OR_RETURN(ValuePtr var, em.Emit1("Sub", ctx.Hint(node, "var"),
                                          {mean_x2, mean2}));
  ASSIGN_OR_RETURN(ValuePtr stddev,
                   em.Emit1("Sqrt", ctx.Hint(node, "std"), {var}));
  ValuePtr eps = em.AddConstant(ScalarTensor(x->dtype, 1e-9),
                                ctx.Hint(node, "eps"));
  ASSIGN_OR_RETURN(stddev, em.Emit1("Add", ctx.Hint(node, "std_eps"),
                                   {stddev, eps}));
  ASSIGN_OR_RETURN(ValuePtr d, em.Emit1("Sub", ctx.Hint(node, "centered"),
                                        {x, mean}));
  ASSIGN_OR_RETURN(ValuePtr y, em.Emit1("Div", ctx.Hint(node), {d, stddev}));
  return ctx.SetOutput(node, 0, y);
}

}  // namespace

void AddLinalgOps(OnnxOpTable* table) {
  (*table)["MeanVarianceNormalization"] = {ConvertMvn, nullptr};
  (*table)["Einsum"] = {ConvertEinsum, CheckEinsum};
  (*table)["Det"] = {ConvertDet, nullptr};
}

}  // namespace sluice
