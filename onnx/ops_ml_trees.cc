// ai.onnx.ml's tree ensembles -> sluice's TreeEnsemble (graph/ops/ml_ops.cc,
// a CPU kernel): TreeEnsembleRegressor and TreeEnsembleClassifier versions
// 1 and 3 (nodes listed with
// their leaves, children by node id within the tree) and TreeEnsemble
// version 5 (branch nodes and leaves apart, children flagged as leaves), as
// onnxruntime runs them. The node arrays become one form: branch nodes by
// index, leaf k as -1 - k, each leaf's (target, weight) pairs. The post
// transforms NONE, LOGISTIC, SOFTMAX and SOFTMAX_ZERO follow as sluice ops.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "onnx/import_context.h"
#include "onnx/onnx_tensor.h"

namespace sluice {
namespace {

// The canonical TreeEnsemble attributes being built.
struct Trees {
  int64_t n_targets = 1;
  std::string aggregate = "SUM";
  std::vector<float> base_values;
  std::vector<int64_t> roots, features, true_child, false_child, missing;
  std::vector<float> thresholds;
  std::vector<std::string> modes;
  std::vector<int64_t> member_begin;
  std::vector<float> member_values;
  std::vector<int64_t> leaf_begin = {0}, leaf_targets;
  std::vector<float> leaf_weights;
};

// A numeric attribute as doubles: its floats, its ints, or its tensor
// (the *_as_tensor and version-5 forms). Empty when absent.
absl::StatusOr<std::vector<double>> Numbers(const onnx::NodeProto& node,
                                            absl::string_view name) {
  std::vector<double> v;
  const onnx::AttributeProto* a = FindAttr(node, name);
  if (a == nullptr) return v;
  if (a->has_t()) {
    ASSIGN_OR_RETURN(Tensor t, TensorFromOnnx(a->t(), ""));
    const int64_t n = t.NumElements();
    for (int64_t i = 0; i < n; ++i) {
      switch (t.dtype()) {
        case DT_FLOAT:
          v.push_back(t.data<float>()[i]);
          break;
        case DT_DOUBLE:
          v.push_back(t.data<double>()[i]);
          break;
        case DT_INT32:
          v.push_back(t.data<int32_t>()[i]);
          break;
        case DT_INT64:
          v.push_back(static_cast<double>(t.data<int64_t>()[i]));
          break;
        case DT_UINT8:
          v.push_back(t.data<uint8_t>()[i]);
          break;
        default:
          return absl::InvalidArgumentError(
              absl::StrCat(NodeLabel(node), ": attribute ", name, " has dtype ",
                           DataTypeName(t.dtype())));
      }
    }
    return v;
  }
  for (float f : a->floats()) v.push_back(f);
  for (int64_t i : a->ints()) v.push_back(static_cast<double>(i));
  return v;
}

// A float attribute, or its *_as_tensor form (version 3).
absl::StatusOr<std::vector<double>> FloatsOrTensor(const onnx::NodeProto& node,
                                                   const std::string& name) {
  ASSIGN_OR_RETURN(std::vector<double> v, Numbers(node, name));
  if (!v.empty()) return v;
  return Numbers(node, name + "_as_tensor");
}

std::vector<int64_t> Ints(const onnx::NodeProto& node, absl::string_view name) {
  return AttrInts(node, name).value_or(std::vector<int64_t>{});
}

std::vector<std::string> Strings(const onnx::NodeProto& node,
                                 absl::string_view name) {
  std::vector<std::string> v;
  if (const onnx::AttributeProto* a = FindAttr(node, name)) {
    for (const std::string& s : a->strings()) v.push_back(s);
  }
  return v;
}

// Versions 1 and 3: nodes_* lists branch nodes and leaves of every tree
// (children by node id within the tree); the leaves' weights come from
// `prefix`_treeids/_nodeids/_ids/_weights (target_ or class_).
absl::StatusOr<Trees> FromNodeLists(const onnx::NodeProto& node,
                                    const std::string& prefix) {
  Trees t;
  const std::vector<int64_t> tree_ids = Ints(node, "nodes_treeids");
  const std::vector<int64_t> node_ids = Ints(node, "nodes_nodeids");
  const std::vector<int64_t> features = Ints(node, "nodes_featureids");
  const std::vector<std::string> modes = Strings(node, "nodes_modes");
  const std::vector<int64_t> trues = Ints(node, "nodes_truenodeids");
  const std::vector<int64_t> falses = Ints(node, "nodes_falsenodeids");
  const std::vector<int64_t> missing =
      Ints(node, "nodes_missing_value_tracks_true");
  ASSIGN_OR_RETURN(std::vector<double> values,
                   FloatsOrTensor(node, "nodes_values"));
  const size_t n = tree_ids.size();
  if (node_ids.size() != n || features.size() != n || modes.size() != n ||
      trues.size() != n || falses.size() != n || values.size() != n ||
      (!missing.empty() && missing.size() != n)) {
    return Bad(
        node,
        absl::StrCat(
            "nodes_treeids, nodes_nodeids, nodes_featureids, nodes_modes, "
            "nodes_truenodeids, nodes_falsenodeids and nodes_values must be as "
            "long; got ",
            n, ", ", node_ids.size(), ", ", features.size(), ", ", modes.size(),
            ", ", trues.size(), ", ", falses.size(), ", ", values.size()));
  }
  // Each node's reference: a branch index, or -1 - its leaf index.
  std::map<std::pair<int64_t, int64_t>, int64_t> ref;
  std::vector<int64_t> refs(n);
  int64_t branches = 0, leaves = 0;
  for (size_t i = 0; i < n; ++i) {
    refs[i] = modes[i] == "LEAF" ? -1 - leaves++ : branches++;
    if (!ref.emplace(std::make_pair(tree_ids[i], node_ids[i]), refs[i])
             .second) {
      return Bad(node, absl::StrCat("tree ", tree_ids[i], " has node ",
                                    node_ids[i], " twice"));
    }
  }
  auto child = [&](size_t i, int64_t id) -> absl::StatusOr<int64_t> {
    auto it = ref.find({tree_ids[i], id});
    if (it == ref.end()) {
      return Bad(node, absl::StrCat("node ", node_ids[i], " of tree ",
                                    tree_ids[i], " names child ", id,
                                    ", which the tree does not have"));
    }
    return it->second;
  };
  std::map<std::pair<int64_t, int64_t>, bool> is_child;
  for (size_t i = 0; i < n; ++i) {
    if (modes[i] == "LEAF") continue;
    absl::string_view mode = modes[i];
    if (!absl::ConsumePrefix(&mode, "BRANCH_")) {
      return Bad(node, absl::StrCat("nodes_modes has '", modes[i], "'"));
    }
    t.modes.push_back(std::string(mode));
    t.features.push_back(features[i]);
    t.thresholds.push_back(static_cast<float>(values[i]));
    ASSIGN_OR_RETURN(int64_t tc, child(i, trues[i]));
    ASSIGN_OR_RETURN(int64_t fc, child(i, falses[i]));
    t.true_child.push_back(tc);
    t.false_child.push_back(fc);
    t.missing.push_back(missing.empty() ? 0 : missing[i]);
    is_child[{tree_ids[i], trues[i]}] = true;
    is_child[{tree_ids[i], falses[i]}] = true;
  }
  // Roots: per tree, in order of first appearance, its first node that is
  // no other's child.
  std::map<int64_t, bool> rooted;
  for (size_t i = 0; i < n; ++i) {
    if (rooted[tree_ids[i]] || is_child.count({tree_ids[i], node_ids[i]})) {
      continue;
    }
    rooted[tree_ids[i]] = true;
    t.roots.push_back(refs[i]);
  }
  // The leaves' weights, grouped per leaf in leaf order.
  const std::vector<int64_t> w_trees = Ints(node, prefix + "treeids");
  const std::vector<int64_t> w_nodes = Ints(node, prefix + "nodeids");
  const std::vector<int64_t> w_ids = Ints(node, prefix + "ids");
  ASSIGN_OR_RETURN(std::vector<double> weights,
                   FloatsOrTensor(node, prefix + "weights"));
  if (w_nodes.size() != w_trees.size() || w_ids.size() != w_trees.size() ||
      weights.size() != w_trees.size()) {
    return Bad(node,
               absl::StrCat(prefix, "treeids, ", prefix, "nodeids, ", prefix,
                            "ids and ", prefix, "weights must be as long"));
  }
  std::vector<std::vector<std::pair<int64_t, float>>> per_leaf(leaves);
  for (size_t k = 0; k < w_trees.size(); ++k) {
    auto it = ref.find({w_trees[k], w_nodes[k]});
    if (it == ref.end() || it->second >= 0) {
      return Bad(
          node, absl::StrCat(prefix, "nodeids names node ", w_nodes[k],
                             " of tree ", w_trees[k], ", which is not a leaf"));
    }
    per_leaf[-1 - it->second].emplace_back(w_ids[k],
                                           static_cast<float>(weights[k]));
  }
  for (const auto& pairs : per_leaf) {
    for (const auto& [target, w] : pairs) {
      t.leaf_targets.push_back(target);
      t.leaf_weights.push_back(w);
    }
    t.leaf_begin.push_back(static_cast<int64_t>(t.leaf_targets.size()));
  }
  ASSIGN_OR_RETURN(std::vector<double> base,
                   FloatsOrTensor(node, "base_values"));
  for (double b : base) t.base_values.push_back(static_cast<float>(b));
  t.aggregate = AttrString(node, "aggregate_function", "SUM");
  return t;
}

// Version 5: branch nodes and leaves apart; children flagged as leaves.
absl::StatusOr<Trees> FromVersion5(const onnx::NodeProto& node) {
  Trees t;
  static const char* kModes[] = {"LEQ", "LT",  "GTE",   "GT",
                                 "EQ",  "NEQ", "MEMBER"};
  static const char* kAggregates[] = {"AVERAGE", "SUM", "MIN", "MAX"};
  const int64_t aggregate = AttrInt(node, "aggregate_function", 1);
  if (aggregate < 0 || aggregate > 3) {
    return Bad(node, absl::StrCat("aggregate_function ", aggregate));
  }
  t.aggregate = kAggregates[aggregate];
  t.n_targets = AttrInt(node, "n_targets", 1);
  t.features = Ints(node, "nodes_featureids");
  ASSIGN_OR_RETURN(std::vector<double> modes, Numbers(node, "nodes_modes"));
  ASSIGN_OR_RETURN(std::vector<double> splits, Numbers(node, "nodes_splits"));
  const std::vector<int64_t> trues = Ints(node, "nodes_truenodeids");
  const std::vector<int64_t> falses = Ints(node, "nodes_falsenodeids");
  const std::vector<int64_t> true_leaf = Ints(node, "nodes_trueleafs");
  const std::vector<int64_t> false_leaf = Ints(node, "nodes_falseleafs");
  t.missing = Ints(node, "nodes_missing_value_tracks_true");
  const size_t n = t.features.size();
  if (modes.size() != n || splits.size() != n || trues.size() != n ||
      falses.size() != n || true_leaf.size() != n || false_leaf.size() != n) {
    return Bad(node, "the nodes_* attributes must be as long");
  }
  ASSIGN_OR_RETURN(std::vector<double> members,
                   Numbers(node, "membership_values"));
  size_t next_member = 0;
  t.member_begin.push_back(0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t m = static_cast<int64_t>(modes[i]);
    if (m < 0 || m > 6) return Bad(node, absl::StrCat("nodes_modes has ", m));
    t.modes.push_back(kModes[m]);
    t.thresholds.push_back(static_cast<float>(splits[i]));
    t.true_child.push_back(true_leaf[i] ? -1 - trues[i] : trues[i]);
    t.false_child.push_back(false_leaf[i] ? -1 - falses[i] : falses[i]);
    if (m == 6) {  // the next NaN-terminated set of membership_values
      while (next_member < members.size() &&
             !std::isnan(members[next_member])) {
        t.member_values.push_back(static_cast<float>(members[next_member++]));
      }
      ++next_member;  // the NaN
    }
    t.member_begin.push_back(static_cast<int64_t>(t.member_values.size()));
  }
  t.roots = Ints(node, "tree_roots");
  t.leaf_targets = Ints(node, "leaf_targetids");
  ASSIGN_OR_RETURN(std::vector<double> weights, Numbers(node, "leaf_weights"));
  if (weights.size() != t.leaf_targets.size()) {
    return Bad(node, "leaf_targetids and leaf_weights must be as long");
  }
  for (size_t k = 0; k < weights.size(); ++k) {
    t.leaf_weights.push_back(static_cast<float>(weights[k]));
    t.leaf_begin.push_back(static_cast<int64_t>(k + 1));
  }
  return t;
}

absl::StatusOr<ValuePtr> EmitTrees(const onnx::NodeProto& node,
                                   ImportContext& ctx, ValuePtr x,
                                   const Trees& t) {
  return ctx.em().Emit1("TreeEnsemble", ctx.Hint(node, "trees"), {std::move(x)},
                        {{"n_targets", MakeIntAttr(t.n_targets)},
                         {"aggregate", MakeStringAttr(t.aggregate)},
                         {"base_values", MakeFloatListAttr(t.base_values)},
                         {"tree_roots", MakeIntListAttr(t.roots)},
                         {"node_features", MakeIntListAttr(t.features)},
                         {"node_thresholds", MakeFloatListAttr(t.thresholds)},
                         {"node_modes", MakeStringListAttr(t.modes)},
                         {"node_true", MakeIntListAttr(t.true_child)},
                         {"node_false", MakeIntListAttr(t.false_child)},
                         {"node_missing_true", MakeIntListAttr(t.missing)},
                         {"member_begin", MakeIntListAttr(t.member_begin)},
                         {"member_values", MakeFloatListAttr(t.member_values)},
                         {"leaf_begin", MakeIntListAttr(t.leaf_begin)},
                         {"leaf_targets", MakeIntListAttr(t.leaf_targets)},
                         {"leaf_weights", MakeFloatListAttr(t.leaf_weights)}});
}

// The post transform over the scores' last axis. One target's score is
// left as it is whatever the transform, as onnxruntime does.
absl::StatusOr<ValuePtr> PostTransform(const onnx::NodeProto& node,
                                       ImportContext& ctx, ValuePtr s,
                                       const std::string& post) {
  GraphEmitter& em = ctx.em();
  const bool one =
      !s->shape.unknown_rank() && s->shape.rank() == 2 && s->shape.dim(1) == 1;
  if (post == "NONE" || one) return s;
  if (post == "LOGISTIC") return em.Emit1("Sigmoid", ctx.Hint(node), {s});
  if (post == "SOFTMAX") {
    return em.Emit1("Softmax", ctx.Hint(node), {s},
                    {{"axis", MakeIntAttr(-1)}});
  }
  // SOFTMAX_ZERO: a softmax over the nonzero scores; zeros stay 0.
  ValuePtr zero =
      em.AddConstant(ScalarTensor(s->dtype, 0), ctx.Hint(node, "zero"));
  ASSIGN_OR_RETURN(ValuePtr nz,
                   em.Emit1("Equal", ctx.Hint(node, "is_zero"), {s, zero}));
  ASSIGN_OR_RETURN(ValuePtr mx,
                   em.Emit1("ReduceMax", ctx.Hint(node, "max"), {s},
                            {{"axes", MakeIntListAttr({-1})},
                             {"keepdims", MakeBoolAttr(true)}}));
  ASSIGN_OR_RETURN(ValuePtr d,
                   em.Emit1("Sub", ctx.Hint(node, "shifted"), {s, mx}));
  ASSIGN_OR_RETURN(ValuePtr e, em.Emit1("Exp", ctx.Hint(node, "exp"), {d}));
  ASSIGN_OR_RETURN(
      e, em.Emit1("Where", ctx.Hint(node, "exp_nonzero"), {nz, zero, e}));
  ASSIGN_OR_RETURN(ValuePtr sum,
                   em.Emit1("ReduceSum", ctx.Hint(node, "sum"), {e},
                            {{"axes", MakeIntListAttr({-1})},
                             {"keepdims", MakeBoolAttr(true)}}));
  return em.Emit1("Div", ctx.Hint(node), {e, sum});
}

std::string CheckPost(const std::string& post) {
  if (post == "NONE" || post == "LOGISTIC" || post == "SOFTMAX" ||
      post == "SOFTMAX_ZERO") {
    return "";
  }
  return absl::StrCat("post_transform ", post, " is not supported");
}

std::string CheckRegressor(const onnx::NodeProto& node, int opset) {
  return CheckPost(AttrString(node, "post_transform", "NONE"));
}

std::string CheckVersion5(const onnx::NodeProto& node, int opset) {
  static const char* kPosts[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO",
                                 "PROBIT"};
  const int64_t post = AttrInt(node, "post_transform", 0);
  if (post < 0 || post > 4) return absl::StrCat("post_transform ", post);
  return CheckPost(kPosts[post]);
}

// x as [N, F] of float or double.
absl::StatusOr<ValuePtr> TreeInput(const onnx::NodeProto& node,
                                   ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  if (x->dtype != DT_DOUBLE) {
    ASSIGN_OR_RETURN(x,
                     EmitCastTo(ctx, ctx.Hint(node, "x_float"), x, DT_FLOAT));
  }
  if (!x->shape.unknown_rank() && x->shape.rank() == 1) {
    ASSIGN_OR_RETURN(x, ctx.em().Emit1("Unsqueeze", ctx.Hint(node, "row"), {x},
                                       {{"axes", MakeIntListAttr({0})}}));
  }
  return x;
}

absl::Status ConvertRegressor(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, TreeInput(node, ctx));
  ASSIGN_OR_RETURN(Trees t, FromNodeLists(node, "target_"));
  t.n_targets = AttrInt(node, "n_targets", 1);
  ASSIGN_OR_RETURN(ValuePtr s, EmitTrees(node, ctx, x, t));
  ASSIGN_OR_RETURN(s, EmitCastTo(ctx, ctx.Hint(node, "float"), s, DT_FLOAT));
  ASSIGN_OR_RETURN(
      ValuePtr y,
      PostTransform(node, ctx, s, AttrString(node, "post_transform", "NONE")));
  return ctx.SetOutput(node, 0, y);
}

absl::Status ConvertVersion5(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(Trees t, FromVersion5(node));
  const DataType out = x->dtype;
  ASSIGN_OR_RETURN(ValuePtr xt, TreeInput(node, ctx));
  ASSIGN_OR_RETURN(ValuePtr s, EmitTrees(node, ctx, xt, t));
  ASSIGN_OR_RETURN(s, EmitCastTo(ctx, ctx.Hint(node, "cast"), s, out));
  static const char* kPosts[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO",
                                 "PROBIT"};
  ASSIGN_OR_RETURN(
      ValuePtr y,
      PostTransform(node, ctx, s, kPosts[AttrInt(node, "post_transform", 0)]));
  return ctx.SetOutput(node, 0, y);
}

// TreeEnsembleClassifier's two-class forms onnxruntime defines: the
// weights of class 0 only (XGBoost's and LightGBM's binary models) or of
// both classes without base_values. `both` says which.
struct Binary {
  bool both = false;
  bool positive = true;  // every weight >= 0
};

std::string CheckClassifier(const onnx::NodeProto& node, int opset) {
  if (FindAttr(node, "classlabels_strings") != nullptr) {
    return "string class labels are not supported (sluice has no string "
           "tensors); export with integer labels";
  }
  const std::vector<int64_t> labels = Ints(node, "classlabels_int64s");
  if (labels.size() < 2) return "needs two or more classlabels_int64s";
  const std::string post = AttrString(node, "post_transform", "NONE");
  std::string why = CheckPost(post);
  if (!why.empty() || labels.size() > 2) return why;
  const std::vector<int64_t> ids = Ints(node, "class_ids");
  const bool has1 = std::find(ids.begin(), ids.end(), 1) != ids.end();
  const bool has0 = std::find(ids.begin(), ids.end(), 0) != ids.end();
  absl::StatusOr<std::vector<double>> base =
      FloatsOrTensor(node, "base_values");
  const size_t bases = base.ok() ? base->size() : 0;
  if (has1 && !(has0 && bases == 0)) {
    return "a two-class model with weights for class 1 needs weights for "
           "class 0 and no base_values (onnxruntime's other two-class forms "
           "are not reproduced)";
  }
  if (!has1 && bases > 1) {
    return "a two-class model with class 0's weights only takes at most one "
           "base value";
  }
  if (!has1 && post != "NONE" && post != "LOGISTIC") {
    return absl::StrCat("post_transform ", post,
                        " of a two-class model with "
                        "one score is not supported");
  }
  return "";
}

absl::Status ConvertClassifier(const onnx::NodeProto& node,
                               ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, TreeInput(node, ctx));
  ASSIGN_OR_RETURN(Trees t, FromNodeLists(node, "class_"));
  const std::vector<int64_t> labels = Ints(node, "classlabels_int64s");
  const std::string post = AttrString(node, "post_transform", "NONE");
  GraphEmitter& em = ctx.em();
  ValuePtr label_values =
      em.AddConstant(Tensor::FromVector<int64_t>(
                         labels, Shape({static_cast<int64_t>(labels.size())})),
                     ctx.Hint(node, "labels"));
  Binary bin;
  if (labels.size() == 2) {
    bin.both = std::find(t.leaf_targets.begin(), t.leaf_targets.end(), 1) !=
               t.leaf_targets.end();
    for (float w : t.leaf_weights) bin.positive = bin.positive && w >= 0;
  }
  t.n_targets = labels.size() == 2 && !bin.both ? 1 : labels.size();
  ASSIGN_OR_RETURN(ValuePtr s, EmitTrees(node, ctx, x, t));
  ASSIGN_OR_RETURN(s, EmitCastTo(ctx, ctx.Hint(node, "float"), s, DT_FLOAT));
  ValuePtr y, z;
  if (labels.size() > 2) {
    ASSIGN_OR_RETURN(ValuePtr idx,
                     em.Emit1("ArgMax", ctx.Hint(node, "argmax"), {s},
                              {{"axis", MakeIntAttr(1)},
                               {"keepdims", MakeBoolAttr(false)}}));
    ASSIGN_OR_RETURN(
        y, em.Emit1("Gather", ctx.Hint(node, "label"), {label_values, idx},
                    {{"axis", MakeIntAttr(0)}}));
    ASSIGN_OR_RETURN(z, PostTransform(node, ctx, s, post));
  } else {
    // The label: class 1 where class 1's score passes 0, or where the one
    // score passes 0.5 (every weight >= 0) or 0. (onnxruntime gives 0 or 1
    // rather than the labels in the form with both scores.)
    ValuePtr s1 = s;
    if (bin.both) {
      ValuePtr one_idx = em.AddConstant(
          Tensor::FromVector<int64_t>({1}, Shape({1})), ctx.Hint(node, "col1"));
      ASSIGN_OR_RETURN(s1, em.Emit1("Gather", ctx.Hint(node, "score1"),
                                    {s, one_idx}, {{"axis", MakeIntAttr(1)}}));
    }
    const bool half = bin.positive && !bin.both;
    ValuePtr thr = em.AddConstant(Tensor::Scalar<float>(half ? 0.5f : 0.0f),
                                  ctx.Hint(node, "threshold"));
    ASSIGN_OR_RETURN(
        ValuePtr pos,
        em.Emit1("Greater", ctx.Hint(node, "positive"), {s1, thr}));
    ASSIGN_OR_RETURN(
        ValuePtr idx,
        EmitCastTo(ctx, ctx.Hint(node, "label_index"), pos, DT_INT64));
    ASSIGN_OR_RETURN(idx,
                     EmitReshape(ctx, ctx.Hint(node, "label_rows"), idx, {-1}));
    ASSIGN_OR_RETURN(
        y, em.Emit1("Gather", ctx.Hint(node, "label"), {label_values, idx},
                    {{"axis", MakeIntAttr(0)}}));
    if (bin.both) {
      ASSIGN_OR_RETURN(z, PostTransform(node, ctx, s, post));
    } else {
      // One score s: [1 - s, s] (weights >= 0) or [-s, s]; LOGISTIC gives
      // [1 - sigmoid(s), sigmoid(s)].
      ValuePtr one =
          em.AddConstant(Tensor::Scalar<float>(1), ctx.Hint(node, "one"));
      ValuePtr p = s, q;
      if (post == "LOGISTIC") {
        ASSIGN_OR_RETURN(p, em.Emit1("Sigmoid", ctx.Hint(node, "p"), {s}));
      }
      if (post == "LOGISTIC" || bin.positive) {
        ASSIGN_OR_RETURN(q, em.Emit1("Sub", ctx.Hint(node, "q"), {one, p}));
      } else {
        ASSIGN_OR_RETURN(q, em.Emit1("Neg", ctx.Hint(node, "q"), {p}));
      }
      ASSIGN_OR_RETURN(
          z, em.Emit1("Concat", ctx.Hint(node, "z"), {q, p},
                      {{"N", MakeIntAttr(2)}, {"axis", MakeIntAttr(1)}}));
    }
  }
  RETURN_IF_ERROR(ctx.SetOutput(node, 0, y));
  return ctx.SetOutput(node, 1, z);
}

}  // namespace

void AddMlTreeOps(OnnxOpTable* table) {
  (*table)["ai.onnx.ml.TreeEnsembleClassifier"] = {ConvertClassifier,
                                                   CheckClassifier};
  (*table)["ai.onnx.ml.TreeEnsembleRegressor"] = {ConvertRegressor,
                                                  CheckRegressor};
  (*table)["ai.onnx.ml.TreeEnsemble"] = {ConvertVersion5, CheckVersion5};
}

}  // namespace sluice
