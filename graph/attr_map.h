// AttrMap: a node's attributes by name, with typed getters. After a graph is
// built every attribute its op declares is present (defaults filled in), so
// getters only fail for names the op does not declare or for wrong types.
//
//   ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis"));
//   ASSIGN_OR_RETURN(std::vector<int64_t> perm, node.attrs().GetIntList("perm"));
//
// Immutable after construction; thread-safe to read.
#ifndef SLUICE_GRAPH_ATTR_MAP_H_
#define SLUICE_GRAPH_ATTR_MAP_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/shape.h"
#include "proto/graph.pb.h"

namespace sluice {

class AttrMap {
 public:
  AttrMap() = default;
  explicit AttrMap(std::map<std::string, AttrValue, std::less<>> values)
      : values_(std::move(values)) {}

  bool Has(std::string_view name) const;
  // nullptr when absent.
  const AttrValue* Find(std::string_view name) const;

  absl::StatusOr<int64_t> GetInt(std::string_view name) const;
  absl::StatusOr<float> GetFloat(std::string_view name) const;
  absl::StatusOr<std::string> GetString(std::string_view name) const;
  absl::StatusOr<bool> GetBool(std::string_view name) const;
  absl::StatusOr<DataType> GetType(std::string_view name) const;
  absl::StatusOr<Shape> GetShape(std::string_view name) const;
  absl::StatusOr<std::vector<int64_t>> GetIntList(std::string_view name) const;
  absl::StatusOr<std::vector<float>> GetFloatList(std::string_view name) const;
  absl::StatusOr<std::vector<DataType>> GetTypeList(
      std::string_view name) const;
  absl::StatusOr<std::vector<std::string>> GetStringList(
      std::string_view name) const;
  // Each shape as ShapeFromProto reads it (INVALID_ARGUMENT for a bad one).
  absl::StatusOr<std::vector<Shape>> GetShapeList(std::string_view name) const;

  const std::map<std::string, AttrValue, std::less<>>& values() const {
    return values_;
  }

 private:
  std::map<std::string, AttrValue, std::less<>> values_;
};

// AttrValue constructors, for op defaults, tests and code that writes graphs.
AttrValue MakeIntAttr(int64_t v);
AttrValue MakeFloatAttr(float v);
AttrValue MakeStringAttr(std::string v);
AttrValue MakeBoolAttr(bool v);
AttrValue MakeTypeAttr(DataType v);
AttrValue MakeShapeAttr(const Shape& v);
AttrValue MakeTensorAttr(TensorProto v);
AttrValue MakeIntListAttr(const std::vector<int64_t>& v);
AttrValue MakeFloatListAttr(const std::vector<float>& v);
AttrValue MakeTypeListAttr(const std::vector<DataType>& v);
AttrValue MakeStringListAttr(const std::vector<std::string>& v);
AttrValue MakeShapeListAttr(const std::vector<Shape>& v);
AttrValue MakeGraphAttr(GraphDef v);

// "int", "float", "list(int)", "tensor", ... for the value held; "unset" for
// an AttrValue with nothing set. For error messages.
std::string AttrValueKind(const AttrValue& value);

}  // namespace sluice

#endif  // SLUICE_GRAPH_ATTR_MAP_H_
