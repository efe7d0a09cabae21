// ONNX NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, lowered to
// sluice ops. The class picked by each target is selected with a one-hot
// mask (Equal against an iota over the class axis) and a sum over that
// axis, so no gather with runtime indices is needed:
//   loss[n, d..] = -input[n, target[n, d..], d..] * w[target] * valid
// with valid = target != ignore_index, and reduction "mean" dividing the sum
// by the sum of w * valid, as the ONNX reference does. Needs the class
// count and the input's rank known at import.
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "onnx/import_context.h"

namespace sluice {
namespace {

std::string CheckLossReduction(const onnx::NodeProto& node, int opset) {
  const std::string r = AttrString(node, "reduction", "mean");
  if (r != "none" && r != "sum" && r != "mean") {
    return absl::StrCat("reduction \"", r, "\"");
  }
  return "";
}

// The NLL of log-probabilities `logp` [N, C, d..] for integer `target`
// [N, d..], with the optional class weights `weight` [C].
absl::StatusOr<ValuePtr> EmitNll(const onnx::NodeProto& node,
                                 ImportContext& ctx, ValuePtr logp,
                                 ValuePtr target, ValuePtr weight) {
  auto& em = ctx.em();
  if (logp->shape.unknown_rank() || logp->shape.rank() < 2 ||
      logp->shape.dim(1) < 0) {
    return absl::UnimplementedError(
        "needs the input's rank and class count known at import");
  }
  const int rank = logp->shape.rank();
  const int64_t classes = logp->shape.dim(1);
  const DataType t = logp->dtype;
  // iota over the class axis: [1, C, 1, ...].
  std::vector<int64_t> iota_dims(rank, 1);
  iota_dims[1] = classes;
  ASSIGN_OR_RETURN(
      ValuePtr iota_v,
      em.CreateConstant(
          NodeLabel(node), DT_INT64, Shape(iota_dims),
          [&](Tensor& iota) {
            for (int64_t c = 0; c < classes; ++c) iota.data<int64_t>()[c] = c;
          },
          ctx.Hint(node, "classes")));
  ASSIGN_OR_RETURN(target,
                   EmitCastTo(ctx, ctx.Hint(node, "target64"), target, DT_INT64));
  ASSIGN_OR_RETURN(ValuePtr t1, em.Emit1("Unsqueeze", ctx.Hint(node, "target_c"),
                                         {target},
                                         {{"axes", MakeIntListAttr({1})}}));
  ASSIGN_OR_RETURN(ValuePtr hot_b, em.Emit1("Equal", ctx.Hint(node, "hot_b"),
                                            {t1, iota_v}));
  ASSIGN_OR_RETURN(ValuePtr hot, EmitCastTo(ctx, ctx.Hint(node, "hot"), hot_b, t));
  const AttrList over_classes = {{"axes", MakeIntListAttr({1})},
                                 {"keepdims", MakeBoolAttr(false)}};
  ASSIGN_OR_RETURN(ValuePtr picked_all,
                   em.Emit1("Mul", ctx.Hint(node, "picked_all"), {logp, hot}));
  ASSIGN_OR_RETURN(ValuePtr picked, em.Emit1("ReduceSum", ctx.Hint(node, "picked"),
                                             {picked_all}, over_classes));
  // Per-element weight: weight[target] (0 for a target outside [0, C)) or 1,
  // times valid (target != ignore_index).
  ValuePtr w;
  if (weight != nullptr) {
    std::vector<int64_t> wdims(rank, 1);
    wdims[1] = classes;
    ASSIGN_OR_RETURN(ValuePtr wb, EmitReshape(ctx, ctx.Hint(node, "weight_c"),
                                              weight, wdims));
    ASSIGN_OR_RETURN(ValuePtr wh, em.Emit1("Mul", ctx.Hint(node, "weight_hot"),
                                           {wb, hot}));
    ASSIGN_OR_RETURN(w, em.Emit1("ReduceSum", ctx.Hint(node, "w"), {wh},
                                 over_classes));
  }
  if (FindAttr(node, "ignore_index") != nullptr) {
    ValuePtr ignore = em.AddConstant(
        ScalarTensor(DT_INT64, static_cast<double>(
                                   AttrInt(node, "ignore_index", 0))),
        ctx.Hint(node, "ignore_index"));
    ASSIGN_OR_RETURN(ValuePtr is_ignored,
                     em.Emit1("Equal", ctx.Hint(node, "ignored"),
                              {target, ignore}));
    ValuePtr zero = em.AddConstant(ScalarTensor(t, 0), ctx.Hint(node, "zero"));
    ValuePtr one = em.AddConstant(ScalarTensor(t, 1), ctx.Hint(node, "one"));
    ASSIGN_OR_RETURN(ValuePtr valid, em.Emit1("Where", ctx.Hint(node, "valid"),
                                              {is_ignored, zero, one}));
    if (w == nullptr) {
      w = valid;
    } else {
      ASSIGN_OR_RETURN(w, em.Emit1("Mul", ctx.Hint(node, "w_valid"),
                                   {w, valid}));
    }
  }
  ValuePtr loss;
  ASSIGN_OR_RETURN(loss, em.Emit1("Neg", ctx.Hint(node, "nll"), {picked}));
  if (w != nullptr) {
    ASSIGN_OR_RETURN(loss, em.Emit1("Mul", ctx.Hint(node, "weighted"),
                                    {loss, w}));
  }
  const std::string reduction = AttrString(node, "reduction", "mean");
  if (reduction == "none") return loss;
  const AttrList all = {{"keepdims", MakeBoolAttr(false)}};
  const bool mean = reduction == "mean";
  ASSIGN_OR_RETURN(ValuePtr sum,
                   em.Emit1(mean && w != nullptr ? "ReduceSum" : mean
                                                   ? "ReduceMean"
                                                   : "ReduceSum",
                            mean && w != nullptr ? ctx.Hint(node, "sum")
                                                 : ctx.Hint(node),
                            {loss}, all));
  if (!mean || w == nullptr) return sum;
  // The weights of the valid elements must have loss's shape to sum them.
  if (!loss->shape.IsFullyDefined()) {
    return absl::UnimplementedError("needs the target's shape known");
  }
  ASSIGN_OR_RETURN(ValuePtr wfull,
                   em.Emit1("Expand", ctx.Hint(node, "w_full"), {w},
                            {{"shape", MakeIntListAttr(std::vector<int64_t>(
                                           loss->shape.dims().begin(),
                                           loss->shape.dims().end()))}}));
  ASSIGN_OR_RETURN(ValuePtr wsum,
                   em.Emit1("ReduceSum", ctx.Hint(node, "w_sum"), {wfull}, all));
  return em.Emit1("Div", ctx.Hint(node), {sum, wsum});
}

absl::Status ConvertNll(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr input, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr target, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr weight, ctx.OptionalInput(node, 2));
  ASSIGN_OR_RETURN(ValuePtr loss, EmitNll(node, ctx, input, target, weight));
  return ctx.SetOutput(node, 0, loss);
}

// SoftmaxCrossEntropyLoss: the NLL of log(softmax(scores)) over axis 1;
// output 1 (optional) is that log-probability.
absl::Status ConvertSoftmaxCrossEntropy(const onnx::NodeProto& node,
                                        ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr scores, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr labels, ctx.Input(node, 1));
  ASSIGN_OR_RETURN(ValuePtr weight, ctx.OptionalInput(node, 2));
  ASSIGN_OR_RETURN(ValuePtr p, ctx.em().Emit1("Softmax", ctx.Hint(node, "softmax"),
                                              {scores},
                                              {{"axis", MakeIntAttr(1)}}));
  ASSIGN_OR_RETURN(ValuePtr logp,
                   ctx.em().Emit1("Log", ctx.Hint(node, "log_prob"), {p}));
  ASSIGN_OR_RETURN(ValuePtr loss, EmitNll(node, ctx, logp, labels, weight));
  RETURN_IF_ERROR(ctx.SetOutput(node, 0, loss));
  if (node.output_size() > 1 && !node.output(1).empty()) {
    return ctx.SetOutput(node, 1, logp);
  }
  return absl::OkStatus();
}

}  // namespace

void AddLossOps(OnnxOpTable* table) {
  (*table)["NegativeLogLikelihoodLoss"] = {ConvertNll, CheckLossReduction};
  (*table)["SoftmaxCrossEntropyLoss"] = {ConvertSoftmaxCrossEntropy,
                                         CheckLossReduction};
}

}  // namespace sluice
