// GraphEmitter: schema checks, shape inference and constant folding per
// emitted node.
#include "onnx/graph_emitter.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/tensor_proto.h"
#include "graph/attr_map.h"
#include "graph/op_registry.h"
#include "graph/shape_inference.h"
#include "kernels/evaluate.h"

namespace sluice {
namespace {

bool Allowed(const AttrDef& attr, DataType dtype) {
  if (attr.allowed_types.empty()) return true;
  for (DataType t : attr.allowed_types) {
    if (t == dtype) return true;
  }
  return false;
}

// Binds the type attribute `attr_name` to `dtype`, or checks it agrees.
absl::Status BindType(const OpDef& def, const std::string& attr_name,
                      DataType dtype, const std::string& arg,
                      std::map<std::string, AttrValue, std::less<>>* attrs) {
  auto it = attrs->find(attr_name);
  if (it == attrs->end()) {
    (*attrs)[attr_name] = MakeTypeAttr(dtype);
  } else if (it->second.type() != dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", arg, "' is ", DataTypeName(dtype), " but ",
                     attr_name, " is ", DataTypeName(it->second.type())));
  }
  const AttrDef* a = def.FindAttr(attr_name);
  if (a != nullptr && !Allowed(*a, dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat(def.name, " does not take ", DataTypeName(dtype), " for ",
                     attr_name, " (input '", arg, "')"));
  }
  return absl::OkStatus();
}

// The ops the importer folds when every input is constant (on their CPU
// kernels, kernels/evaluate.h): what shape-computing subgraphs and weight
// preprocessing use. The rest is left to the optimizer's constant_folding,
// which folds any op under the session's limits.
bool FoldedAtImport(const std::string& op) {
  static const auto* ops = new absl::flat_hash_set<std::string>{
      "Identity", "Cast",      "Neg",    "Abs",       "Relu",  "Sqrt",
      "Rsqrt",    "Exp",       "Log",    "Erf",       "Tanh",  "Sigmoid",
      "Add",      "Sub",       "Mul",    "Div",       "Pow",   "Maximum",
      "Minimum",  "Equal",     "Less",   "Greater",   "Where", "Reshape",
      "Mod",      "FMod",      "Squeeze", "Unsqueeze", "Expand", "Transpose",
      "Slice",    "Concat",    "Split",  "Gather"};
  return ops->contains(op);
}

struct Inferred {
  AttrMap attrs;  // complete: defaults and bound type attributes
  std::vector<DataType> dtypes;
  std::vector<Shape> shapes;
};

absl::StatusOr<Inferred> Infer(const OpDef& def,
                               const std::vector<ValuePtr>& inputs,
                               const AttrList& given) {
  std::map<std::string, AttrValue, std::less<>> attrs(given.begin(),
                                                      given.end());
  // Match inputs to argument definitions; list arguments take the rest of
  // the inputs less one per later argument.
  size_t next = 0;
  for (size_t a = 0; a < def.inputs.size(); ++a) {
    const ArgDef& arg = def.inputs[a];
    size_t count = 1;
    if (!arg.number_attr.empty()) {
      size_t later = def.inputs.size() - a - 1;
      count = inputs.size() >= next + later ? inputs.size() - next - later : 0;
      if (!attrs.count(arg.number_attr)) {
        attrs[arg.number_attr] = MakeIntAttr(static_cast<int64_t>(count));
      }
    }
    for (size_t k = 0; k < count; ++k, ++next) {
      if (next >= inputs.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat(def.name, " needs input '", arg.name, "'"));
      }
      DataType dt = inputs[next]->dtype;
      if (!arg.type_attr.empty()) {
        RETURN_IF_ERROR(BindType(def, arg.type_attr, dt, arg.name, &attrs));
      } else if (arg.fixed_type != dt) {
        return absl::InvalidArgumentError(
            absl::StrCat("input '", arg.name, "' is ", DataTypeName(dt), ", ",
                         def.name, " needs ", DataTypeName(arg.fixed_type)));
      }
    }
  }
  if (next != inputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        def.name, " takes ", next, " inputs, got ", inputs.size()));
  }
  for (const AttrDef& a : def.attrs) {
    if (attrs.count(a.name)) continue;
    if (!a.default_value.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(def.name, " needs attribute '", a.name, "'"));
    }
    attrs[a.name] = *a.default_value;
  }
  Inferred out;
  for (const ArgDef& arg : def.outputs) {
    int64_t count = 1;
    if (!arg.number_attr.empty()) count = attrs[arg.number_attr].i();
    if (count < 0 || count > kMaxListArgs) {
      return absl::InvalidArgumentError(
          absl::StrCat(arg.number_attr, " = ", count, " is out of range"));
    }
    DataType dt = arg.fixed_type;
    if (!arg.type_attr.empty()) dt = attrs[arg.type_attr].type();
    out.dtypes.insert(out.dtypes.end(), count, dt);
  }
  out.attrs = AttrMap(std::move(attrs));
  std::vector<DataType> in_dtypes;
  std::vector<Shape> in_shapes;
  std::vector<const Tensor*> in_values;
  for (const ValuePtr& v : inputs) {
    in_dtypes.push_back(v->dtype);
    in_shapes.push_back(v->shape);
    in_values.push_back(v->constant ? &*v->constant : nullptr);
  }
  InferenceContext ctx(&out.attrs, in_dtypes, in_shapes, in_values, out.dtypes);
  if (def.shape_fn) RETURN_IF_ERROR(def.shape_fn(ctx));
  out.shapes = ctx.output_shapes();
  return out;
}

}  // namespace

std::string SanitizeNodeName(absl::string_view name) {
  std::string out(name.empty() ? "node" : name);
  for (char& c : out) {
    if (c == ':' || c == '^') c = '_';
  }
  return out;
}

std::string GraphEmitter::UniqueName(absl::string_view hint) {
  const std::string base = SanitizeNodeName(hint);
  std::string name = base;
  for (int i = 1; names_.contains(name); ++i) name = absl::StrCat(base, "_", i);
  names_.insert(name);
  return name;
}

absl::Status GraphEmitter::ReserveName(const std::string& name) {
  if (!names_.insert(name).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("the name '", name, "' is used twice"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ValuePtr> GraphEmitter::AddInput(const std::string& name,
                                                DataType dtype,
                                                const Shape& shape) {
  RETURN_IF_ERROR(ReserveName(name));
  NodeDef* node = def_->add_node();
  node->set_name(name);
  node->set_op("Input");
  (*node->mutable_attr())["dtype"] = MakeTypeAttr(dtype);
  (*node->mutable_attr())["shape"] = MakeShapeAttr(shape);
  auto v = std::make_shared<ValueData>();
  v->ref = name;
  v->dtype = dtype;
  v->shape = shape;
  return v;
}

const ResourceLimits GraphEmitter::kDefaultLimits;

absl::StatusOr<ValuePtr> GraphEmitter::CreateConstant(
    absl::string_view what, DataType dtype, const Shape& shape,
    absl::FunctionRef<void(Tensor&)> fill, absl::string_view name_hint) {
  RETURN_IF_ERROR(CheckCreatedTensor(*limits_, what, dtype, shape));
  ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape));
  fill(t);
  return AddConstant(std::move(t), name_hint);
}

absl::StatusOr<ValuePtr> GraphEmitter::FoldConstant(
    DataType dtype, const Shape& shape, absl::FunctionRef<void(Tensor&)> fill,
    absl::string_view name_hint) {
  if (!fold_budget_->Take(dtype, shape)) return ValuePtr();
  ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape));
  fill(t);
  return AddConstant(std::move(t), name_hint);
}

ValuePtr GraphEmitter::AddConstant(Tensor value, absl::string_view name_hint) {
  auto v = std::make_shared<ValueData>();
  v->dtype = value.dtype();
  v->shape = value.shape();
  v->constant = std::move(value);
  v->name_hint = std::string(name_hint);
  return v;
}

absl::StatusOr<std::string> GraphEmitter::Materialize(const ValuePtr& value) {
  if (!value->ref.empty()) return value->ref;
  if (!value->constant.has_value()) {
    return absl::InternalError("a value with neither node nor constant");
  }
  std::string name = UniqueName(value->name_hint);
  NodeDef* node = def_->add_node();
  node->set_name(name);
  node->set_op("Const");
  if (value_sink_ != nullptr) {
    TensorProto proto = TensorDescriptionProto(*value->constant);
    if (value->external.has_value()) {
      *proto.mutable_external() = *value->external;
    }
    (*node->mutable_attr())["value"] = MakeTensorAttr(std::move(proto));
    value_sink_->emplace(name, *value->constant);
  } else if (value->external.has_value()) {
    TensorProto proto;
    proto.set_dtype(value->constant->dtype());
    *proto.mutable_shape() = ShapeToProto(value->constant->shape());
    *proto.mutable_external() = *value->external;
    (*node->mutable_attr())["value"] = MakeTensorAttr(std::move(proto));
  } else {
    (*node->mutable_attr())["value"] =
        MakeTensorAttr(TensorToProto(*value->constant));
  }
  value->ref = name;
  return name;
}

absl::StatusOr<std::vector<ValuePtr>> GraphEmitter::Emit(
    const std::string& op, absl::string_view name_hint,
    const std::vector<ValuePtr>& inputs, const AttrList& attrs) {
  const OpDef* def = OpRegistry::Global()->Find(op);
  if (def == nullptr) {
    return absl::InternalError(absl::StrCat("sluice has no op ", op));
  }
  absl::StatusOr<Inferred> inferred = Infer(*def, inputs, attrs);
  if (!inferred.ok()) {
    std::vector<std::string> shapes;
    for (const ValuePtr& v : inputs) {
      shapes.push_back(
          absl::StrCat(DataTypeName(v->dtype), v->shape.DebugString()));
    }
    return absl::Status(
        inferred.status().code(),
        absl::StrCat("sluice ", op, " on (", absl::StrJoin(shapes, ", "),
                     "): ", inferred.status().message()));
  }
  bool all_const = FoldedAtImport(op);
  int64_t input_bytes = 0;
  for (const ValuePtr& v : inputs) {
    all_const = all_const && v->constant;
    if (all_const) input_bytes += static_cast<int64_t>(v->constant->bytes());
  }
  // The fold limits (core/resource_limits.h) on every output together:
  // charged only when all fit.
  int64_t largest = 0, total = 0;
  for (size_t i = 0; all_const && i < inferred->shapes.size(); ++i) {
    absl::StatusOr<int64_t> bytes =
        CreatedTensorBytes(inferred->dtypes[i], inferred->shapes[i]);
    all_const = bytes.ok();
    if (all_const) {
      largest = std::max(largest, *bytes);
      total += *bytes;
    }
  }
  all_const = all_const && fold_budget_->Take(largest, total, input_bytes);
  std::vector<ValuePtr> outs;
  if (all_const) {
    std::vector<Tensor> values;
    for (const ValuePtr& v : inputs) values.push_back(*v->constant);
    absl::StatusOr<std::vector<Tensor>> folded =
        EvaluateOpOnCpu(op, attrs, values);
    if (folded.ok()) {
      for (size_t i = 0; i < folded->size(); ++i) {
        const Tensor& t = (*folded)[i];
        if (t.dtype() != inferred->dtypes[i] ||
            t.shape() != inferred->shapes[i]) {
          return absl::InternalError(absl::StrCat(
              "folding ", op, " gave ", DataTypeName(t.dtype()),
              t.shape().DebugString(), ", inference said ",
              DataTypeName(inferred->dtypes[i]),
              inferred->shapes[i].DebugString()));
        }
      }
      for (Tensor& t : *folded) outs.push_back(AddConstant(t, name_hint));
      return outs;
    }
    // No CPU kernel for this dtype: the node is emitted as it is.
    if (!absl::IsUnimplemented(folded.status()) &&
        !absl::IsNotFound(folded.status())) {
      return folded.status();
    }
  }
  std::string name = UniqueName(name_hint);
  NodeDef node;
  node.set_name(name);
  node.set_op(op);
  for (const ValuePtr& v : inputs) {
    ASSIGN_OR_RETURN(std::string ref, Materialize(v));
    node.add_input(ref);
  }
  for (const auto& [key, value] : attrs) (*node.mutable_attr())[key] = value;
  *def_->add_node() = std::move(node);
  for (size_t i = 0; i < inferred->dtypes.size(); ++i) {
    auto v = std::make_shared<ValueData>();
    v->ref = i == 0 ? name : absl::StrCat(name, ":", i);
    v->dtype = inferred->dtypes[i];
    v->shape = inferred->shapes[i];
    outs.push_back(std::move(v));
  }
  return outs;
}

absl::StatusOr<ValuePtr> GraphEmitter::Emit1(
    const std::string& op, absl::string_view name_hint,
    const std::vector<ValuePtr>& inputs, const AttrList& attrs) {
  ASSIGN_OR_RETURN(std::vector<ValuePtr> outs,
                   Emit(op, name_hint, inputs, attrs));
  if (outs.size() != 1) {
    return absl::InternalError(
        absl::StrCat(op, " has ", outs.size(), " outputs, expected 1"));
  }
  return outs[0];
}

void FillWith(const Tensor& one, Tensor& t) {
  const size_t size = DataTypeSize(t.dtype());
  char* dst = static_cast<char*>(t.raw_data());
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    std::memcpy(dst + i * size, one.raw_data(), size);
  }
}

Tensor ScalarTensor(DataType dtype, double v) {
  absl::StatusOr<Tensor> t = Tensor::Create(dtype, Shape());
  if (!t.ok()) return Tensor();
  SLUICE_SWITCH_DTYPE(dtype, { *t->data<T>() = static_cast<T>(v); }, {});
  return *std::move(t);
}

Tensor Int64Vector(const std::vector<int64_t>& values) {
  return Tensor::FromVector<int64_t>(
      values, Shape({static_cast<int64_t>(values.size())}));
}

absl::StatusOr<std::vector<int64_t>> ToInt64s(const Tensor& t) {
  std::vector<int64_t> out;
  out.reserve(t.NumElements());
  switch (t.dtype()) {
    case DT_INT8:
    case DT_INT32:
    case DT_INT64:
    case DT_UINT8:
    case DT_BOOL:
      SLUICE_SWITCH_DTYPE(t.dtype(),
                          {
                            for (T v : t.flat<T>())
                              out.push_back(static_cast<int64_t>(v));
                          },
                          {});
      return out;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("expected integers, got ", DataTypeName(t.dtype())));
  }
}

absl::StatusOr<std::vector<double>> ToDoubles(const Tensor& t) {
  std::vector<double> out;
  out.reserve(t.NumElements());
  SLUICE_SWITCH_DTYPE(
      t.dtype(),
      {
        for (T v : t.flat<T>()) out.push_back(static_cast<double>(v));
      },
      return absl::InvalidArgumentError("invalid tensor"));
  return out;
}

}  // namespace sluice
