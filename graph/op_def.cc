// OpDefBuilder, the common dtype sets and attribute type checks.
#include "graph/op_def.h"

#include "absl/strings/str_cat.h"
#include "core/dtype.h"
#include "graph/attr_map.h"

namespace sluice {

const std::vector<DataType> kFloatTypes = {DT_FLOAT16, DT_BFLOAT16, DT_FLOAT,
                                           DT_DOUBLE};
const std::vector<DataType> kNumericTypes = {
    DT_FLOAT16, DT_BFLOAT16, DT_FLOAT,  DT_DOUBLE, DT_INT8,   DT_INT16,
    DT_INT32,   DT_INT64,    DT_UINT8,  DT_UINT16, DT_UINT32, DT_UINT64};
const std::vector<DataType> kIndexTypes = {DT_INT32, DT_INT64};
const std::vector<DataType> kAllTypes = AllDataTypes();

std::string AttrTypeName(AttrType type) {
  switch (type) {
    case AttrType::kInt: return "int";
    case AttrType::kFloat: return "float";
    case AttrType::kString: return "string";
    case AttrType::kBool: return "bool";
    case AttrType::kType: return "type";
    case AttrType::kShape: return "shape";
    case AttrType::kTensor: return "tensor";
    case AttrType::kListInt: return "list(int)";
    case AttrType::kListFloat: return "list(float)";
    case AttrType::kListString: return "list(string)";
    case AttrType::kListType: return "list(type)";
    case AttrType::kListShape: return "list(shape)";
    case AttrType::kGraph: return "graph";
  }
  return "unknown";
}

absl::Status CheckAttrType(const AttrValue& value, AttrType type) {
  std::string kind = AttrValueKind(value);
  std::string want = AttrTypeName(type);
  bool is_list = want.rfind("list(", 0) == 0;
  if (kind == want || (is_list && kind == "list")) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("is ", kind, ", expected ", want));
}

const AttrDef* OpDef::FindAttr(const std::string& attr_name) const {
  for (const AttrDef& a : attrs) {
    if (a.name == attr_name) return &a;
  }
  return nullptr;
}

OpDefBuilder::OpDefBuilder(std::string name) { def_.name = std::move(name); }

namespace {

ArgDef MakeArg(std::string name, std::string type, std::string number_attr) {
  ArgDef arg;
  arg.name = std::move(name);
  absl::StatusOr<DataType> fixed = ParseDataType(type);
  if (fixed.ok()) {
    arg.fixed_type = *fixed;
  } else {
    arg.type_attr = std::move(type);
  }
  arg.number_attr = std::move(number_attr);
  return arg;
}

}  // namespace

OpDefBuilder& OpDefBuilder::Input(std::string name, std::string type) {
  def_.inputs.push_back(MakeArg(std::move(name), std::move(type), ""));
  return *this;
}

OpDefBuilder& OpDefBuilder::InputList(std::string name, std::string type_attr,
                                      std::string number_attr) {
  def_.inputs.push_back(
      MakeArg(std::move(name), std::move(type_attr), std::move(number_attr)));
  return *this;
}

OpDefBuilder& OpDefBuilder::Output(std::string name, std::string type) {
  def_.outputs.push_back(MakeArg(std::move(name), std::move(type), ""));
  return *this;
}

OpDefBuilder& OpDefBuilder::OutputList(std::string name,
                                       std::string type_attr,
                                       std::string number_attr) {
  def_.outputs.push_back(
      MakeArg(std::move(name), std::move(type_attr), std::move(number_attr)));
  return *this;
}

OpDefBuilder& OpDefBuilder::InputTypeList(std::string name,
                                          std::string type_list_attr) {
  ArgDef arg;
  arg.name = std::move(name);
  arg.type_list_attr = std::move(type_list_attr);
  def_.inputs.push_back(std::move(arg));
  return *this;
}

OpDefBuilder& OpDefBuilder::OutputTypeList(std::string name,
                                           std::string type_list_attr) {
  ArgDef arg;
  arg.name = std::move(name);
  arg.type_list_attr = std::move(type_list_attr);
  def_.outputs.push_back(std::move(arg));
  return *this;
}

OpDefBuilder& OpDefBuilder::TypeAttr(std::string name,
                                     std::vector<DataType> allowed) {
  AttrDef a;
  a.name = std::move(name);
  a.type = AttrType::kType;
  a.allowed_types = std::move(allowed);
  def_.attrs.push_back(std::move(a));
  return *this;
}

OpDefBuilder& OpDefBuilder::Attr(std::string name, AttrType type) {
  AttrDef a;
  a.name = std::move(name);
  a.type = type;
  def_.attrs.push_back(std::move(a));
  return *this;
}

OpDefBuilder& OpDefBuilder::Attr(std::string name, AttrType type,
                                 AttrValue default_value) {
  AttrDef a;
  a.name = std::move(name);
  a.type = type;
  a.default_value = std::move(default_value);
  def_.attrs.push_back(std::move(a));
  return *this;
}

OpDefBuilder& OpDefBuilder::ShapeFn(sluice::ShapeFn fn) {
  def_.shape_fn = std::move(fn);
  return *this;
}

OpDefBuilder& OpDefBuilder::Doc(std::string doc) {
  def_.doc = std::move(doc);
  return *this;
}

OpDef OpDefBuilder::Build() { return std::move(def_); }

}  // namespace sluice
