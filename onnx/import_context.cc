// ImportContext, ONNX attribute getters and the shared handler helpers.
#include "onnx/import_context.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"

namespace sluice {

std::string NodeLabel(const onnx::NodeProto& node) {
  std::string name = node.name().empty()
                         ? (node.output_size() > 0 ? node.output(0) : "")
                         : node.name();
  return absl::StrCat("node '", name, "' (", node.op_type(), ")");
}

absl::Status Bad(const onnx::NodeProto& node, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(NodeLabel(node), ": ", message));
}

bool HasInput(const onnx::NodeProto& node, int i) {
  return node.input_size() > i && !node.input(i).empty();
}

ValuePtr Scalar(ImportContext& ctx, DataType dtype, double v,
                absl::string_view hint) {
  return ctx.em().AddConstant(ScalarTensor(dtype, v), hint);
}

absl::StatusOr<ValuePtr> ImportContext::OptionalInput(
    const onnx::NodeProto& node, int i) {
  if (i >= node.input_size() || node.input(i).empty()) return nullptr;
  ValuePtr v = Find(node.input(i));
  if (v == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        NodeLabel(node), " reads '", node.input(i),
        "', which no earlier node, initializer or graph input provides"));
  }
  return v;
}

absl::StatusOr<ValuePtr> ImportContext::Input(const onnx::NodeProto& node,
                                              int i) {
  ASSIGN_OR_RETURN(ValuePtr v, OptionalInput(node, i));
  if (v == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(NodeLabel(node), " needs input ", i));
  }
  return v;
}

absl::StatusOr<Tensor> ImportContext::ConstInput(const onnx::NodeProto& node,
                                                 int i,
                                                 absl::string_view what) {
  ASSIGN_OR_RETURN(ValuePtr v, Input(node, i));
  if (v->constant) return *v->constant;
  std::string why;
  if (!v->shape.IsFullyDefined()) {
    why = absl::StrCat(
        " (it depends on values or on shapes that are not known: '",
        node.input(i), "' is ", DataTypeName(v->dtype), v->shape.DebugString(),
        "; fix dynamic input dimensions with input_shapes or dim_values, "
        "`--input-shape NAME=D0,D1,...` or `--dim NAME=N`)");
  } else {
    why = absl::StrCat(" ('", node.input(i),
                       "' is computed from graph inputs at run time)");
  }
  return absl::InvalidArgumentError(
      absl::StrCat(NodeLabel(node), ": sluice needs its ", what, " (input ", i,
                   ") known at import time, and it cannot be folded", why));
}

absl::StatusOr<std::optional<std::vector<int64_t>>> ImportContext::ConstInts(
    const onnx::NodeProto& node, int i, absl::string_view what) {
  if (i >= node.input_size() || node.input(i).empty()) return std::nullopt;
  ASSIGN_OR_RETURN(Tensor t, ConstInput(node, i, what));
  absl::StatusOr<std::vector<int64_t>> v = ToInt64s(t);
  if (!v.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(NodeLabel(node), ": ", what,
                                                   " must be integers, got ",
                                                   DataTypeName(t.dtype())));
  }
  return *std::move(v);
}

bool ImportContext::IsRuntime(const onnx::NodeProto& node, int i) const {
  if (i >= node.input_size() || node.input(i).empty()) return false;
  ValuePtr v = Find(node.input(i));
  return v != nullptr && !v->constant.has_value();
}

absl::StatusOr<ValuePtr> ImportContext::ParamInput(const onnx::NodeProto& node,
                                                   int i) {
  ASSIGN_OR_RETURN(ValuePtr v, OptionalInput(node, i));
  if (v == nullptr) {
    return em_->AddConstant(Int64Vector({}), Hint(node, "empty"));
  }
  if (v->dtype != DT_INT64 && v->dtype != DT_INT32) {
    return absl::InvalidArgumentError(
        absl::StrCat(NodeLabel(node), ": input ", i, " must be int64, got ",
                     DataTypeName(v->dtype)));
  }
  return EmitCastTo(*this, Hint(node, absl::StrCat("param", i)), v, DT_INT64);
}

absl::Status ImportContext::SetOutput(const onnx::NodeProto& node, int i,
                                      ValuePtr value) {
  if (i >= node.output_size() || node.output(i).empty()) {
    return absl::OkStatus();
  }
  values_[node.output(i)] = std::move(value);
  return absl::OkStatus();
}

ValuePtr ImportContext::Find(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : it->second;
}

std::string ImportContext::Hint(const onnx::NodeProto& node,
                                absl::string_view suffix) const {
  std::string base = !node.name().empty()     ? node.name()
                     : node.output_size() > 0 ? node.output(0)
                                              : node.op_type();
  if (suffix.empty()) return base;
  return absl::StrCat(base, "/", suffix);
}

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& node,
                                     absl::string_view name) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t AttrInt(const onnx::NodeProto& node, absl::string_view name,
                int64_t default_value) {
  const onnx::AttributeProto* a = FindAttr(node, name);
  return a == nullptr ? default_value : a->i();
}

float AttrFloat(const onnx::NodeProto& node, absl::string_view name,
                float default_value) {
  const onnx::AttributeProto* a = FindAttr(node, name);
  return a == nullptr ? default_value : a->f();
}

std::string AttrString(const onnx::NodeProto& node, absl::string_view name,
                       const std::string& default_value) {
  const onnx::AttributeProto* a = FindAttr(node, name);
  return a == nullptr ? default_value : a->s();
}

std::optional<std::vector<int64_t>> AttrInts(const onnx::NodeProto& node,
                                             absl::string_view name) {
  const onnx::AttributeProto* a = FindAttr(node, name);
  if (a == nullptr) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

absl::StatusOr<ValuePtr> EmitReshape(ImportContext& ctx, absl::string_view hint,
                                     ValuePtr x,
                                     const std::vector<int64_t>& shape) {
  return ctx.em().Emit1("Reshape", hint, {std::move(x)},
                        {{"shape", MakeIntListAttr(shape)}});
}

absl::StatusOr<ValuePtr> EmitCastTo(ImportContext& ctx, absl::string_view hint,
                                    ValuePtr x, DataType dtype) {
  if (x->dtype == dtype) return x;
  return ctx.em().Emit1("Cast", hint, {std::move(x)},
                        {{"DstT", MakeTypeAttr(dtype)}});
}

const OnnxOpTable& GetOnnxOpTable() {
  static const OnnxOpTable* table = [] {
    auto* t = new OnnxOpTable;
    AddElementwiseOps(t);
    AddShapeOps(t);
    AddNnOps(t);
    AddMathOps(t);
    AddNormOps(t);
    AddAttentionOps(t);
    AddLossOps(t);
    AddQuantOps(t);
    AddIndexOps(t);
    AddVisionOps(t);
    AddSeqOps(t);
    AddQLinearOps(t);
    AddSignalOps(t);
    AddControlFlowOps(t);
    AddBitwiseOps(t);
    AddSelectOps(t);
    AddLinalgOps(t);
    AddMlOps(t);
    AddMlTreeOps(t);
    return t;
  }();
  return *table;
}

std::string OnnxOpKey(const onnx::NodeProto& node) {
  if (node.domain().empty() || node.domain() == "ai.onnx") {
    return node.op_type();
  }
  return absl::StrCat(node.domain(), ".", node.op_type());
}

bool OnnxDomainHasOps(absl::string_view domain) {
  const std::string prefix = absl::StrCat(domain, ".");
  for (const auto& [key, spec] : GetOnnxOpTable()) {
    if (absl::StartsWith(key, prefix)) return true;
  }
  return false;
}

}  // namespace sluice
