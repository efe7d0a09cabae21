// Schema of TreeEnsemble (docs/ops.md, "Machine learning"): the decision
// trees of ONNX's ai.onnx.ml TreeEnsembleRegressor/Classifier and
// TreeEnsemble, which the importer (onnx/ops_ml_trees.cc) brings to this one
// form.
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/op_registry.h"
#include "graph/shape_fns.h"

namespace sluice {
namespace {

// [N, F] -> [N, n_targets].
absl::Status TreeEnsembleFn(InferenceContext& c) {
  ASSIGN_OR_RETURN(int64_t targets, c.attrs().GetInt("n_targets"));
  if (targets < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("TreeEnsemble n_targets must be >= 1, got ", targets));
  }
  const Shape& x = c.input_shape(0);
  if (x.unknown_rank()) {
    c.set_output_shape(0, Shape({kUnknownDim, targets}));
    return absl::OkStatus();
  }
  if (x.rank() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TreeEnsemble needs an input [N, F], got ", x.DebugString()));
  }
  c.set_output_shape(0, Shape({x.dim(0), targets}));
  return absl::OkStatus();
}

}  // namespace

void RegisterMlOps(OpRegistry* r) {
  RegisterOrDie(
      r, OpDefBuilder("TreeEnsemble")
             .Input("x", "T")
             .Output("scores", "T")
             .TypeAttr("T", {DT_FLOAT, DT_DOUBLE})
             .Attr("n_targets", AttrType::kInt)
             .Attr("aggregate", AttrType::kString, MakeStringAttr("SUM"))
             .Attr("base_values", AttrType::kListFloat, MakeFloatListAttr({}))
             .Attr("tree_roots", AttrType::kListInt)
             .Attr("node_features", AttrType::kListInt)
             .Attr("node_thresholds", AttrType::kListFloat)
             .Attr("node_modes", AttrType::kListString)
             .Attr("node_true", AttrType::kListInt)
             .Attr("node_false", AttrType::kListInt)
             .Attr("node_missing_true", AttrType::kListInt, MakeIntListAttr({}))
             .Attr("member_begin", AttrType::kListInt, MakeIntListAttr({}))
             .Attr("member_values", AttrType::kListFloat, MakeFloatListAttr({}))
             .Attr("leaf_begin", AttrType::kListInt)
             .Attr("leaf_targets", AttrType::kListInt)
             .Attr("leaf_weights", AttrType::kListFloat)
             .ShapeFn(TreeEnsembleFn)
             .Doc("Decision trees over the rows of x [N, F]: each tree walks "
                  "from its root (node_* per branch node: the feature, the "
                  "threshold, the mode LEQ, LT, GTE, GT, EQ, NEQ or MEMBER, "
                  "the children; a child or root >= 0 is a branch node, -1 - "
                  "k is leaf k) to a leaf, whose weights (leaf_begin[k] .. "
                  "leaf_begin[k + 1] of leaf_targets/leaf_weights) go to their "
                  "targets; the trees' weights per target are combined by "
                  "aggregate (SUM, AVERAGE, MIN, MAX) and base_values added: "
                  "scores [N, n_targets]. A NaN feature takes the true branch "
                  "where node_missing_true says so.")
             .Build());
}

}  // namespace sluice
