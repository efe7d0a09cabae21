// The ai.onnx.ml operators of scikit-learn, XGBoost and LightGBM exports
// (skl2onnx, onnxmltools), as onnxruntime runs them, lowered to sluice ops
// (so they run on every device): Binarizer, Scaler, Normalizer,
// LinearRegressor, LinearClassifier, ArrayFeatureExtractor and LabelEncoder
// (int64 and float tensors). Their
// outputs are float (the ML domain's Y), whatever the input's numeric type.
// Keys "ai.onnx.ml.Op" (OnnxOpKey); versions in onnx/op_versions.cc.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "onnx/import_context.h"
#include "onnx/onnx_tensor.h"

namespace sluice {
namespace {

std::vector<float> AttrFloatList(const onnx::NodeProto& node,
                                 absl::string_view name) {
  const onnx::AttributeProto* a = FindAttr(node, name);
  if (a == nullptr) return {};
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

ValuePtr FloatConst(ImportContext& ctx, const std::vector<float>& v,
                    const Shape& shape, absl::string_view hint) {
  return ctx.em().AddConstant(Tensor::FromVector<float>(v, shape), hint);
}

// A per-feature constant: a scalar for one value, else [n] (broadcast over
// the last axis).
ValuePtr FeatureConst(ImportContext& ctx, const std::vector<float>& v,
                      absl::string_view hint) {
  if (v.size() == 1)
    return ctx.em().AddConstant(Tensor::Scalar<float>(v[0]), hint);
  return FloatConst(ctx, v, Shape({static_cast<int64_t>(v.size())}), hint);
}

// Input 0 as float32 (the ML ops take float, double, int64 and int32).
absl::StatusOr<ValuePtr> FloatInput(const onnx::NodeProto& node,
                                    ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  return EmitCastTo(ctx, ctx.Hint(node, "x_float"), x, DT_FLOAT);
}

// Binarizer: 1 where x > threshold, else 0, in x's dtype (integers
// compared in double, so a fractional threshold is not truncated).
// (onnxruntime refuses a NaN input; here NaN gives 0.)
absl::Status ConvertBinarizer(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  GraphEmitter& em = ctx.em();
  ValuePtr xc = x;
  if (x->dtype != DT_FLOAT && x->dtype != DT_DOUBLE) {
    ASSIGN_OR_RETURN(xc,
                     EmitCastTo(ctx, ctx.Hint(node, "x_double"), x, DT_DOUBLE));
  }
  ValuePtr t = em.AddConstant(
      ScalarTensor(xc->dtype, AttrFloat(node, "threshold", 0.0f)),
      ctx.Hint(node, "threshold"));
  ASSIGN_OR_RETURN(ValuePtr above,
                   em.Emit1("Greater", ctx.Hint(node, "above"), {xc, t}));
  ASSIGN_OR_RETURN(ValuePtr y,
                   EmitCastTo(ctx, ctx.Hint(node), above, x->dtype));
  return ctx.SetOutput(node, 0, y);
}

std::string CheckScaler(const onnx::NodeProto& node, int opset) {
  const size_t offsets = AttrFloatList(node, "offset").size();
  const size_t scales = AttrFloatList(node, "scale").size();
  if (offsets == 0 || scales == 0) return "needs offset and scale";
  if (offsets != scales && offsets != 1 && scales != 1) {
    return absl::StrCat("offset has ", offsets, " values and scale ", scales,
                        "; they must be as many (or one)");
  }
  return "";
}

// Scaler: (x - offset) * scale, per feature (the last axis).
absl::Status ConvertScaler(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, FloatInput(node, ctx));
  GraphEmitter& em = ctx.em();
  ValuePtr offset = FeatureConst(ctx, AttrFloatList(node, "offset"),
                                 ctx.Hint(node, "offset"));
  ValuePtr scale =
      FeatureConst(ctx, AttrFloatList(node, "scale"), ctx.Hint(node, "scale"));
  ASSIGN_OR_RETURN(ValuePtr d,
                   em.Emit1("Sub", ctx.Hint(node, "centered"), {x, offset}));
  ASSIGN_OR_RETURN(ValuePtr y, em.Emit1("Mul", ctx.Hint(node), {d, scale}));
  return ctx.SetOutput(node, 0, y);
}

std::string CheckNormalizer(const onnx::NodeProto& node, int opset) {
  const std::string norm = AttrString(node, "norm", "MAX");
  if (norm != "MAX" && norm != "L1" && norm != "L2") {
    return absl::StrCat("norm '", norm, "' is not MAX, L1 or L2");
  }
  return "";
}

// Normalizer: each row (the last axis) divided by its largest value (MAX,
// signed, as onnxruntime), the sum of its magnitudes (L1) or its Euclidean
// norm (L2); a row whose divisor is 0 is left as it is.
absl::Status ConvertNormalizer(const onnx::NodeProto& node,
                               ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, FloatInput(node, ctx));
  GraphEmitter& em = ctx.em();
  const std::string norm = AttrString(node, "norm", "MAX");
  const AttrList last = {{"axes", MakeIntListAttr({-1})},
                         {"keepdims", MakeBoolAttr(true)}};
  ValuePtr d;
  if (norm == "MAX") {
    ASSIGN_OR_RETURN(d,
                     em.Emit1("ReduceMax", ctx.Hint(node, "max"), {x}, last));
  } else if (norm == "L1") {
    ASSIGN_OR_RETURN(ValuePtr a, em.Emit1("Abs", ctx.Hint(node, "abs"), {x}));
    ASSIGN_OR_RETURN(d, em.Emit1("ReduceSum", ctx.Hint(node, "l1"), {a}, last));
  } else {
    ASSIGN_OR_RETURN(ValuePtr x2,
                     em.Emit1("Mul", ctx.Hint(node, "x2"), {x, x}));
    ASSIGN_OR_RETURN(ValuePtr s, em.Emit1("ReduceSum", ctx.Hint(node, "sum_x2"),
                                          {x2}, last));
    ASSIGN_OR_RETURN(d, em.Emit1("Sqrt", ctx.Hint(node, "l2"), {s}));
  }
  ValuePtr zero =
      em.AddConstant(Tensor::Scalar<float>(0), ctx.Hint(node, "zero"));
  ValuePtr one =
      em.AddConstant(Tensor::Scalar<float>(1), ctx.Hint(node, "one"));
  ASSIGN_OR_RETURN(ValuePtr is_zero,
                   em.Emit1("Equal", ctx.Hint(node, "is_zero"), {d, zero}));
  ASSIGN_OR_RETURN(ValuePtr safe, em.Emit1("Where", ctx.Hint(node, "divisor"),
                                           {is_zero, one, d}));
  ASSIGN_OR_RETURN(ValuePtr y, em.Emit1("Div", ctx.Hint(node), {x, safe}));
  return ctx.SetOutput(node, 0, y);
}

// x as a [N, C] matrix: a vector is one row.
absl::StatusOr<ValuePtr> Rows(const onnx::NodeProto& node, ImportContext& ctx,
                              ValuePtr x) {
  if (x->shape.unknown_rank() || x->shape.rank() > 2 || x->shape.rank() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(NodeLabel(node), ": needs an input [N, C] or [C], got ",
                     x->shape.DebugString()));
  }
  if (x->shape.rank() == 2) return x;
  return ctx.em().Emit1("Unsqueeze", ctx.Hint(node, "row"), {x},
                        {{"axes", MakeIntListAttr({0})}});
}

std::string CheckLinearRegressor(const onnx::NodeProto& node, int opset) {
  const int64_t targets = AttrInt(node, "targets", 1);
  const size_t coefs = AttrFloatList(node, "coefficients").size();
  const size_t intercepts = AttrFloatList(node, "intercepts").size();
  if (targets < 1 || coefs == 0 || coefs % targets != 0) {
    return absl::StrCat(coefs, " coefficients are not a multiple of targets ",
                        targets);
  }
  if (intercepts != 0 && intercepts != static_cast<size_t>(targets)) {
    return absl::StrCat(intercepts, " intercepts for ", targets, " targets");
  }
  const std::string post = AttrString(node, "post_transform", "NONE");
  if (post != "NONE") {
    return absl::StrCat("post_transform ", post, " is not supported");
  }
  return "";
}

// x [N, F] (or [F]) as float times coefficients [rows, F] transposed, plus
// intercepts [rows] (none: 0): [N, rows].
absl::StatusOr<ValuePtr> Affine(const onnx::NodeProto& node, ImportContext& ctx,
                                int64_t rows) {
  ASSIGN_OR_RETURN(ValuePtr x, FloatInput(node, ctx));
  ASSIGN_OR_RETURN(x, Rows(node, ctx, x));
  GraphEmitter& em = ctx.em();
  const std::vector<float> coefs = AttrFloatList(node, "coefficients");
  const int64_t features = static_cast<int64_t>(coefs.size()) / rows;
  if (x->shape.dim(1) >= 0 && x->shape.dim(1) != features) {
    return absl::InvalidArgumentError(
        absl::StrCat(NodeLabel(node), ": input has ", x->shape.dim(1),
                     " features, the ", "coefficients ", features, " per row"));
  }
  std::vector<float> wt(coefs.size());  // [features, rows]
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t f = 0; f < features; ++f) {
      wt[f * rows + t] = coefs[t * features + f];
    }
  }
  ValuePtr w = FloatConst(ctx, wt, Shape({features, rows}),
                          ctx.Hint(node, "coefficients"));
  std::vector<float> b = AttrFloatList(node, "intercepts");
  if (b.empty()) b.assign(rows, 0.0f);
  ASSIGN_OR_RETURN(ValuePtr xw,
                   em.Emit1("MatMul", ctx.Hint(node, "xw"), {x, w}));
  ValuePtr bias =
      FloatConst(ctx, b, Shape({rows}), ctx.Hint(node, "intercepts"));
  return em.Emit1("Add", ctx.Hint(node, "scores"), {xw, bias});
}

// LinearRegressor: [N, targets].
absl::Status ConvertLinearRegressor(const onnx::NodeProto& node,
                                    ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr y, Affine(node, ctx, AttrInt(node, "targets", 1)));
  return ctx.SetOutput(node, 0, y);
}

// LinearClassifier's rows of coefficients: one per intercept, or one per
// class.
int64_t ClassifierRows(const onnx::NodeProto& node) {
  const size_t intercepts = AttrFloatList(node, "intercepts").size();
  if (intercepts > 0) return static_cast<int64_t>(intercepts);
  const std::optional<std::vector<int64_t>> labels =
      AttrInts(node, "classlabels_ints");
  return labels ? static_cast<int64_t>(labels->size()) : 0;
}

std::string CheckLinearClassifier(const onnx::NodeProto& node, int opset) {
  if (FindAttr(node, "classlabels_strings") != nullptr) {
    return "string class labels are not supported (sluice has no string "
           "tensors); export with integer labels";
  }
  const std::vector<int64_t> labels =
      AttrInts(node, "classlabels_ints").value_or(std::vector<int64_t>{});
  if (labels.size() < 2) return "needs two or more classlabels_ints";
  const int64_t rows = ClassifierRows(node);
  const size_t coefs = AttrFloatList(node, "coefficients").size();
  if (rows < 1 || coefs == 0 || coefs % rows != 0) {
    return absl::StrCat(coefs, " coefficients are not a multiple of the ", rows,
                        " classes");
  }
  if (rows != static_cast<int64_t>(labels.size()) &&
      !(rows == 1 && labels.size() == 2)) {
    return absl::StrCat(rows, " rows of coefficients for ", labels.size(),
                        " labels");
  }
  const std::string post = AttrString(node, "post_transform", "NONE");
  if (rows == 1 && post != "NONE" && post != "LOGISTIC") {
    return absl::StrCat("post_transform ", post,
                        " of a two-class model with one score is not "
                        "supported");
  }
  if (post != "NONE" && post != "LOGISTIC" && post != "SOFTMAX") {
    return absl::StrCat("post_transform ", post, " is not supported");
  }
  return "";
}

// LinearClassifier: scores [N, classes] (the post transform applied) and
// the label of the largest score. One row of coefficients for two classes
// (scikit-learn's binary LogisticRegression) is one score s: class 1 where
// s > 0, scores [1 - s, s] ([1 - sigmoid(s), sigmoid(s)] with LOGISTIC), as
// onnxruntime.
absl::Status ConvertLinearClassifier(const onnx::NodeProto& node,
                                     ImportContext& ctx) {
  const int64_t rows = ClassifierRows(node);
  ASSIGN_OR_RETURN(ValuePtr s, Affine(node, ctx, rows));
  GraphEmitter& em = ctx.em();
  const std::vector<int64_t> labels = *AttrInts(node, "classlabels_ints");
  ValuePtr label_values =
      em.AddConstant(Tensor::FromVector<int64_t>(
                         labels, Shape({static_cast<int64_t>(labels.size())})),
                     ctx.Hint(node, "labels"));
  const std::string post = AttrString(node, "post_transform", "NONE");
  ValuePtr idx, z;
  if (rows == 1) {
    ValuePtr zero =
        em.AddConstant(Tensor::Scalar<float>(0), ctx.Hint(node, "zero"));
    ASSIGN_OR_RETURN(
        ValuePtr pos,
        em.Emit1("Greater", ctx.Hint(node, "positive"), {s, zero}));
    ASSIGN_OR_RETURN(
        idx, EmitCastTo(ctx, ctx.Hint(node, "label_index"), pos, DT_INT64));
    ASSIGN_OR_RETURN(idx,
                     EmitReshape(ctx, ctx.Hint(node, "label_rows"), idx, {-1}));
    ValuePtr p = s;
    if (post == "LOGISTIC") {
      ASSIGN_OR_RETURN(p, em.Emit1("Sigmoid", ctx.Hint(node, "p"), {s}));
    }
    ValuePtr one =
        em.AddConstant(Tensor::Scalar<float>(1), ctx.Hint(node, "one"));
    ASSIGN_OR_RETURN(ValuePtr q,
                     em.Emit1("Sub", ctx.Hint(node, "q"), {one, p}));
    ASSIGN_OR_RETURN(
        z, em.Emit1("Concat", ctx.Hint(node, "z"), {q, p},
                    {{"N", MakeIntAttr(2)}, {"axis", MakeIntAttr(1)}}));
  } else {
    ASSIGN_OR_RETURN(idx, em.Emit1("ArgMax", ctx.Hint(node, "argmax"), {s},
                                   {{"axis", MakeIntAttr(1)},
                                    {"keepdims", MakeBoolAttr(false)}}));
    z = s;
    if (post == "LOGISTIC") {
      ASSIGN_OR_RETURN(z, em.Emit1("Sigmoid", ctx.Hint(node, "z"), {s}));
    } else if (post == "SOFTMAX") {
      ASSIGN_OR_RETURN(z, em.Emit1("Softmax", ctx.Hint(node, "z"), {s},
                                   {{"axis", MakeIntAttr(-1)}}));
    }
  }
  ASSIGN_OR_RETURN(ValuePtr y,
                   em.Emit1("Gather", ctx.Hint(node, "label"),
                            {label_values, idx}, {{"axis", MakeIntAttr(0)}}));
  RETURN_IF_ERROR(ctx.SetOutput(node, 0, y));
  return ctx.SetOutput(node, 1, z);
}

// ArrayFeatureExtractor: the features of x (its last axis) at the indices
// Y (flattened): [..., len(Y)]; a vector x gives [1, len(Y)].
absl::Status ConvertArrayFeatureExtractor(const onnx::NodeProto& node,
                                          ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  ASSIGN_OR_RETURN(ValuePtr idx, ctx.Input(node, 1));
  GraphEmitter& em = ctx.em();
  if (x->shape.unknown_rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat(NodeLabel(node), ": needs the input's rank known"));
  }
  if (x->shape.rank() == 1) {
    ASSIGN_OR_RETURN(x, em.Emit1("Unsqueeze", ctx.Hint(node, "row"), {x},
                                 {{"axes", MakeIntListAttr({0})}}));
  }
  if (idx->shape.unknown_rank() || idx->shape.rank() != 1) {
    ASSIGN_OR_RETURN(idx,
                     EmitReshape(ctx, ctx.Hint(node, "indices"), idx, {-1}));
  }
  ASSIGN_OR_RETURN(ValuePtr y,
                   em.Emit1("Gather", ctx.Hint(node), {x, idx},
                            {{"axis", MakeIntAttr(x->shape.rank() - 1)}}));
  return ctx.SetOutput(node, 0, y);
}

// LabelEncoder's keys, values or default (`what`): its ints, floats or
// tensor form; empty when none is given. `dtype` says which was found.
absl::StatusOr<std::vector<double>> EncoderList(const onnx::NodeProto& node,
                                                const std::string& what,
                                                DataType* dtype) {
  std::vector<double> v;
  const bool single = what == "default";
  if (const auto* a = FindAttr(node, what + (single ? "_int64" : "_int64s"))) {
    *dtype = DT_INT64;
    if (single) v.push_back(static_cast<double>(a->i()));
    for (int64_t i : a->ints()) v.push_back(static_cast<double>(i));
  } else if (const auto* f =
                 FindAttr(node, what + (single ? "_float" : "_floats"))) {
    *dtype = DT_FLOAT;
    if (single) v.push_back(f->f());
    for (float x : f->floats()) v.push_back(x);
  } else if (const auto* t = FindAttr(node, what + "_tensor")) {
    ASSIGN_OR_RETURN(Tensor tensor, TensorFromOnnx(t->t(), ""));
    *dtype = tensor.dtype();
    for (int64_t i = 0; i < tensor.NumElements(); ++i) {
      if (tensor.dtype() == DT_INT64) {
        v.push_back(static_cast<double>(tensor.data<int64_t>()[i]));
      } else if (tensor.dtype() == DT_FLOAT) {
        v.push_back(tensor.data<float>()[i]);
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat(NodeLabel(node), ": ", what, "_tensor of ",
                         DataTypeName(tensor.dtype()), " is not supported"));
      }
    }
  }
  return v;
}

std::string CheckLabelEncoder(const onnx::NodeProto& node, int opset) {
  for (const char* name : {"keys_strings", "values_strings", "default_string",
                           "classes_strings"}) {
    if (FindAttr(node, name) != nullptr) {
      return "string keys or values are not supported (sluice has no string "
             "tensors)";
    }
  }
  DataType kd = DT_INVALID, vd = DT_INVALID;
  absl::StatusOr<std::vector<double>> keys = EncoderList(node, "keys", &kd);
  absl::StatusOr<std::vector<double>> values = EncoderList(node, "values", &vd);
  if (!keys.ok()) return std::string(keys.status().message());
  if (!values.ok()) return std::string(values.status().message());
  if (keys->empty() || keys->size() != values->size()) {
    return absl::StrCat("needs as many keys as values (", keys->size(), " and ",
                        values->size(), ")");
  }
  return "";
}

Tensor EncoderTensor(DataType dtype, const std::vector<double>& v) {
  const Shape shape({static_cast<int64_t>(v.size())});
  if (dtype == DT_INT64) {
    std::vector<int64_t> ints(v.begin(), v.end());
    return Tensor::FromVector<int64_t>(ints, shape);
  }
  return Tensor::FromVector<float>(std::vector<float>(v.begin(), v.end()),
                                   shape);
}

// LabelEncoder on int64 and float tensors: each element replaced by the
// value of the key it equals (the first), or the default (-1, or -0.0 for
// floats, as ONNX says) where none.
absl::Status ConvertLabelEncoder(const onnx::NodeProto& node,
                                 ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr x, ctx.Input(node, 0));
  GraphEmitter& em = ctx.em();
  DataType kd = DT_INVALID, vd = DT_INVALID, dd = DT_INVALID;
  ASSIGN_OR_RETURN(std::vector<double> keys, EncoderList(node, "keys", &kd));
  ASSIGN_OR_RETURN(std::vector<double> values,
                   EncoderList(node, "values", &vd));
  ASSIGN_OR_RETURN(std::vector<double> dflt, EncoderList(node, "default", &dd));
  if (kd != x->dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat(NodeLabel(node), ": keys of ", DataTypeName(kd),
                     " for an input of ", DataTypeName(x->dtype)));
  }
  const double fallback =
      dflt.empty() ? (vd == DT_INT64 ? -1.0 : -0.0) : dflt[0];
  ValuePtr key_values =
      em.AddConstant(EncoderTensor(kd, keys), ctx.Hint(node, "keys"));
  ValuePtr value_values =
      em.AddConstant(EncoderTensor(vd, values), ctx.Hint(node, "values"));
  ValuePtr default_value =
      em.AddConstant(ScalarTensor(vd, fallback), ctx.Hint(node, "default"));
  ASSIGN_OR_RETURN(ValuePtr col,
                   em.Emit1("Unsqueeze", ctx.Hint(node, "col"), {x},
                            {{"axes", MakeIntListAttr({-1})}}));
  ASSIGN_OR_RETURN(ValuePtr eq,
                   em.Emit1("Equal", ctx.Hint(node, "eq"), {col, key_values}));
  ASSIGN_OR_RETURN(ValuePtr hits,
                   EmitCastTo(ctx, ctx.Hint(node, "hits"), eq, DT_INT32));
  const AttrList last = {{"axis", MakeIntAttr(-1)},
                         {"keepdims", MakeBoolAttr(false)}};
  ASSIGN_OR_RETURN(ValuePtr idx,
                   em.Emit1("ArgMax", ctx.Hint(node, "key"), {hits}, last));
  ASSIGN_OR_RETURN(ValuePtr found,
                   em.Emit1("ReduceMax", ctx.Hint(node, "found"), {eq},
                            {{"axes", MakeIntListAttr({-1})},
                             {"keepdims", MakeBoolAttr(false)}}));
  ASSIGN_OR_RETURN(ValuePtr mapped,
                   em.Emit1("Gather", ctx.Hint(node, "mapped"),
                            {value_values, idx}, {{"axis", MakeIntAttr(0)}}));
  ASSIGN_OR_RETURN(ValuePtr y, em.Emit1("Where", ctx.Hint(node),
                                        {found, mapped, default_value}));
  return ctx.SetOutput(node, 0, y);
}

}  // namespace

void AddMlOps(OnnxOpTable* table) {
  (*table)["ai.onnx.ml.LabelEncoder"] = {ConvertLabelEncoder,
                                         CheckLabelEncoder};
  (*table)["ai.onnx.ml.Binarizer"] = {ConvertBinarizer, nullptr};
  (*table)["ai.onnx.ml.Scaler"] = {ConvertScaler, CheckScaler};
  (*table)["ai.onnx.ml.Normalizer"] = {ConvertNormalizer, CheckNormalizer};
  (*table)["ai.onnx.ml.LinearRegressor"] = {ConvertLinearRegressor,
                                            CheckLinearRegressor};
  (*table)["ai.onnx.ml.ArrayFeatureExtractor"] = {ConvertArrayFeatureExtractor,
                                                  nullptr};
  (*table)["ai.onnx.ml.LinearClassifier"] = {ConvertLinearClassifier,
                                             CheckLinearClassifier};
}

}  // namespace sluice
