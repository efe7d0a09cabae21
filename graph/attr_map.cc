// AttrMap getters and AttrValue helpers.
#include "graph/attr_map.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/dtype.h"

namespace sluice {
namespace {

// (Debian's Abseil has its own string_view: std::string_view is converted to
// std::string before it meets absl::StrCat.)
absl::Status WrongType(std::string_view name, const AttrValue& v,
                       const char* want) {
  return absl::InvalidArgumentError(absl::StrCat(
      "attribute '", std::string(name), "' is ", AttrValueKind(v), ", not ",
      want));
}

}  // namespace

bool AttrMap::Has(std::string_view name) const {
  return values_.find(name) != values_.end();
}

const AttrValue* AttrMap::Find(std::string_view name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

// Looks `name` up, or returns NOT_FOUND from the enclosing getter.
#define SLUICE_FIND_ATTR_(v, name)                                        \
  const AttrValue* v = Find(name);                                        \
  if (v == nullptr) {                                                     \
    return absl::NotFoundError(absl::StrCat("no attribute '", std::string(name), "'")); \
  }

absl::StatusOr<int64_t> AttrMap::GetInt(std::string_view name) const {
  SLUICE_FIND_ATTR_(v, name);
  if (v->value_case() != AttrValue::kI) return WrongType(name, *v, "int");
  return v->i();
}

absl::StatusOr<float> AttrMap::GetFloat(std::string_view name) const {
  SLUICE_FIND_ATTR_(v, name);
  if (v->value_case() != AttrValue::kF) return WrongType(name, *v, "float");
  return v->f();
}

absl::StatusOr<std::string> AttrMap::GetString(std::string_view name) const {
  SLUICE_FIND_ATTR_(v, name);
  if (v->value_case() != AttrValue::kS) return WrongType(name, *v, "string");
  return v->s();
}

absl::StatusOr<bool> AttrMap::GetBool(std::string_view name) const {
  SLUICE_FIND_ATTR_(v, name);
  if (v->value_case() != AttrValue::kB) return WrongType(name, *v, "bool");
  return v->b();
}

absl::StatusOr<DataType> AttrMap::GetType(std::string_view name) const {
  SLUICE_FIND_ATTR_(v, name);
  if (v->value_case() != AttrValue::kType) return WrongType(name, *v, "type");
  return v->type();
}

absl::StatusOr<Shape> AttrMap::GetShape(std::string_view name) const {
  SLUICE_FIND_ATTR_(v, name);
  if (v->value_case() != AttrValue::kShape) {
    return WrongType(name, *v, "shape");
  }
  return ShapeFromProto(v->shape());
}

absl::StatusOr<std::vector<int64_t>> AttrMap::GetIntList(
    std::string_view name) const {
  SLUICE_FIND_ATTR_(v, name);
  std::string kind = AttrValueKind(*v);
  if (kind != "list(int)" && kind != "list") {
    return WrongType(name, *v, "list(int)");
  }
  return std::vector<int64_t>(v->list().i().begin(), v->list().i().end());
}

absl::StatusOr<std::vector<DataType>> AttrMap::GetTypeList(
    std::string_view name) const {
  SLUICE_FIND_ATTR_(v, name);
  std::string kind = AttrValueKind(*v);
  if (kind != "list(type)" && kind != "list") {
    return WrongType(name, *v, "list(type)");
  }
  std::vector<DataType> out;
  for (int t : v->list().type()) out.push_back(static_cast<DataType>(t));
  return out;
}

absl::StatusOr<std::vector<float>> AttrMap::GetFloatList(
    std::string_view name) const {
  SLUICE_FIND_ATTR_(v, name);
  std::string kind = AttrValueKind(*v);
  if (kind != "list(float)" && kind != "list") {
    return WrongType(name, *v, "list(float)");
  }
  return std::vector<float>(v->list().f().begin(), v->list().f().end());
}

absl::StatusOr<std::vector<std::string>> AttrMap::GetStringList(
    std::string_view name) const {
  SLUICE_FIND_ATTR_(v, name);
  std::string kind = AttrValueKind(*v);
  if (kind != "list(string)" && kind != "list") {
    return WrongType(name, *v, "list(string)");
  }
  return std::vector<std::string>(v->list().s().begin(), v->list().s().end());
}

absl::StatusOr<std::vector<Shape>> AttrMap::GetShapeList(
    std::string_view name) const {
  SLUICE_FIND_ATTR_(v, name);
  std::string kind = AttrValueKind(*v);
  if (kind != "list(shape)" && kind != "list") {
    return WrongType(name, *v, "list(shape)");
  }
  std::vector<Shape> out;
  for (const TensorShapeProto& p : v->list().shape()) {
    absl::StatusOr<Shape> s = ShapeFromProto(p);
    if (!s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attribute '", std::string(name), "' entry ", out.size(), ": ",
          s.status().message()));
    }
    out.push_back(*std::move(s));
  }
  return out;
}

#undef SLUICE_FIND_ATTR_

AttrValue MakeIntAttr(int64_t v) {
  AttrValue a;
  a.set_i(v);
  return a;
}
AttrValue MakeFloatAttr(float v) {
  AttrValue a;
  a.set_f(v);
  return a;
}
AttrValue MakeStringAttr(std::string v) {
  AttrValue a;
  a.set_s(std::move(v));
  return a;
}
AttrValue MakeBoolAttr(bool v) {
  AttrValue a;
  a.set_b(v);
  return a;
}
AttrValue MakeTypeAttr(DataType v) {
  AttrValue a;
  a.set_type(v);
  return a;
}
AttrValue MakeShapeAttr(const Shape& v) {
  AttrValue a;
  *a.mutable_shape() = ShapeToProto(v);
  return a;
}
AttrValue MakeTensorAttr(TensorProto v) {
  AttrValue a;
  *a.mutable_tensor() = std::move(v);
  return a;
}
AttrValue MakeIntListAttr(const std::vector<int64_t>& v) {
  AttrValue a;
  a.mutable_list()->mutable_i()->Add(v.begin(), v.end());
  return a;
}
AttrValue MakeFloatListAttr(const std::vector<float>& v) {
  AttrValue a;
  a.mutable_list()->mutable_f()->Add(v.begin(), v.end());
  return a;
}

AttrValue MakeTypeListAttr(const std::vector<DataType>& v) {
  AttrValue a;
  a.mutable_list();  // an empty list is still a list
  for (DataType t : v) a.mutable_list()->add_type(t);
  return a;
}
AttrValue MakeStringListAttr(const std::vector<std::string>& v) {
  AttrValue a;
  a.mutable_list();
  for (const std::string& s : v) a.mutable_list()->add_s(s);
  return a;
}
AttrValue MakeShapeListAttr(const std::vector<Shape>& v) {
  AttrValue a;
  a.mutable_list();
  for (const Shape& s : v) *a.mutable_list()->add_shape() = ShapeToProto(s);
  return a;
}
AttrValue MakeGraphAttr(GraphDef v) {
  AttrValue a;
  *a.mutable_graph() = std::move(v);
  return a;
}

std::string AttrValueKind(const AttrValue& value) {
  switch (value.value_case()) {
    case AttrValue::kI: return "int";
    case AttrValue::kF: return "float";
    case AttrValue::kS: return "string";
    case AttrValue::kB: return "bool";
    case AttrValue::kType: return "type";
    case AttrValue::kShape: return "shape";
    case AttrValue::kTensor: return "tensor";
    case AttrValue::kGraph: return "graph";
    case AttrValue::kList: {
      const AttrValue::ListValue& l = value.list();
      int kinds = (l.i_size() > 0) + (l.f_size() > 0) + (l.s_size() > 0) +
                  (l.b_size() > 0) + (l.type_size() > 0) +
                  (l.shape_size() > 0) + (l.tensor_size() > 0);
      if (kinds == 0) return "list";  // empty: fits every list type
      if (kinds > 1) return "list(mixed)";
      if (l.i_size() > 0) return "list(int)";
      if (l.f_size() > 0) return "list(float)";
      if (l.s_size() > 0) return "list(string)";
      if (l.b_size() > 0) return "list(bool)";
      if (l.type_size() > 0) return "list(type)";
      if (l.shape_size() > 0) return "list(shape)";
      return "list(tensor)";
    }
    default: return "unset";
  }
}

}  // namespace sluice
