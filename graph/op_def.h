// OpDef: what an op is: its inputs, outputs, attributes (with defaults and
// allowed dtypes) and the shape function that infers its output shapes.
// Built with OpDefBuilder and registered in the OpRegistry (op_registry.h).
//
//   OpDef def = OpDefBuilder("Add")
//                   .Input("x", "T").Input("y", "T").Output("z", "T")
//                   .TypeAttr("T", kNumericTypes)
//                   .ShapeFn(BroadcastShapeFn)
//                   .Doc("Elementwise x + y with NumPy broadcasting.")
//                   .Build();
//
// An OpDef is immutable once registered; thread-safe to read.
#ifndef SLUICE_GRAPH_OP_DEF_H_
#define SLUICE_GRAPH_OP_DEF_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "proto/graph.pb.h"

namespace sluice {

class InferenceContext;  // graph/shape_inference.h

enum class AttrType {
  kInt, kFloat, kString, kBool, kType, kShape, kTensor,
  kListInt, kListFloat, kListString, kListType, kListShape,
  kGraph,  // a subgraph (AttrValue.graph): If's branches, Loop's body
};
std::string AttrTypeName(AttrType type);  // "int", "list(int)", ...

struct AttrDef {
  std::string name;
  AttrType type = AttrType::kInt;
  // Absent: the attribute is required. For kType attrs bound to inputs, the
  // loader infers the value from the inputs when the node does not set it.
  std::optional<AttrValue> default_value;
  // For kType: the dtypes allowed (empty: any).
  std::vector<DataType> allowed_types;
};

// One input or output argument. Its dtype is either fixed or given by a type
// attribute; `number_attr` makes it a list of that many tensors (Concat's
// inputs, Split's outputs). `type_list_attr` (a list(type) attribute, which
// the node must set) makes it a list of tensors of those dtypes, one per
// entry, possibly none (the values a control-flow node passes to its
// subgraph).
struct ArgDef {
  std::string name;
  DataType fixed_type = DT_INVALID;
  std::string type_attr;
  std::string number_attr;
  std::string type_list_attr;
};

using ShapeFn = std::function<absl::Status(InferenceContext&)>;

struct OpDef {
  std::string name;
  std::vector<ArgDef> inputs;
  std::vector<ArgDef> outputs;
  std::vector<AttrDef> attrs;
  ShapeFn shape_fn;
  std::string doc;

  const AttrDef* FindAttr(const std::string& attr_name) const;
};

// OK when `value` holds a value of `type` (an empty list fits every list
// type); INVALID_ARGUMENT naming both kinds otherwise.
absl::Status CheckAttrType(const AttrValue& value, AttrType type);

// Most tensors a list argument may hold (Concat's inputs, Split's outputs).
// Bounds what a number in a file can make the loader allocate.
inline constexpr int64_t kMaxListArgs = int64_t{1} << 16;

// Common dtype sets for TypeAttr.
extern const std::vector<DataType> kFloatTypes;    // f16, bf16, f32, f64
extern const std::vector<DataType> kNumericTypes;  // floats + (u)int8/16/32/64
extern const std::vector<DataType> kIndexTypes;    // int32, int64
extern const std::vector<DataType> kAllTypes;      // every dtype

class OpDefBuilder {
 public:
  explicit OpDefBuilder(std::string name);
  // `type` is a type attribute's name, or a dtype name ("int64", "bool") for
  // a fixed type.
  OpDefBuilder& Input(std::string name, std::string type);
  OpDefBuilder& InputList(std::string name, std::string type_attr,
                          std::string number_attr);
  OpDefBuilder& Output(std::string name, std::string type);
  OpDefBuilder& OutputList(std::string name, std::string type_attr,
                           std::string number_attr);
  // A list argument of mixed dtypes, given by list(type) attr
  // `type_list_attr` (declared with Attr(name, AttrType::kListType)).
  OpDefBuilder& InputTypeList(std::string name, std::string type_list_attr);
  OpDefBuilder& OutputTypeList(std::string name, std::string type_list_attr);
  OpDefBuilder& TypeAttr(std::string name, std::vector<DataType> allowed);
  OpDefBuilder& Attr(std::string name, AttrType type);  // required
  OpDefBuilder& Attr(std::string name, AttrType type, AttrValue default_value);
  OpDefBuilder& ShapeFn(sluice::ShapeFn fn);
  OpDefBuilder& Doc(std::string doc);
  OpDef Build();

 private:
  OpDef def_;
};

}  // namespace sluice

#endif  // SLUICE_GRAPH_OP_DEF_H_
