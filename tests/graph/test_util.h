// Helpers for graph tests: GraphDefs from text, and running one op's shape
// inference on inputs of given dtypes and shapes.
#ifndef SLUICE_TESTS_GRAPH_TEST_UTIL_H_
#define SLUICE_TESTS_GRAPH_TEST_UTIL_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"

namespace sluice {
namespace testing_util {

// Parses a text GraphDef; aborts the test binary on a syntax error in the
// test itself.
inline GraphDef ParseGraphDef(const std::string& text) {
  GraphDef def;
  if (!google::protobuf::TextFormat::ParseFromString(text, &def)) {
    ADD_FAILURE() << "bad test GraphDef:\n" << text;
  }
  return def;
}

struct TypedShape {
  DataType dtype = DT_FLOAT;
  Shape shape;
};

// Builds Input nodes x0..xn-1 and one node "op" of `op` reading them, and
// returns the node's output shapes (or the build error).
inline absl::StatusOr<std::vector<Shape>> InferOp(
    const std::string& op, const std::vector<TypedShape>& inputs,
    const std::map<std::string, AttrValue>& attrs = {}) {
  GraphDef def;
  NodeDef* node = nullptr;
  for (size_t i = 0; i < inputs.size(); ++i) {
    NodeDef* in = def.add_node();
    in->set_name(absl::StrCat("x", i));
    in->set_op("Input");
    (*in->mutable_attr())["dtype"].set_type(inputs[i].dtype);
    *(*in->mutable_attr())["shape"].mutable_shape() =
        ShapeToProto(inputs[i].shape);
  }
  node = def.add_node();
  node->set_name("op");
  node->set_op(op);
  for (size_t i = 0; i < inputs.size(); ++i) {
    node->add_input(absl::StrCat("x", i));
  }
  for (const auto& [k, v] : attrs) (*node->mutable_attr())[k] = v;
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def);
  if (!g.ok()) return g.status();
  const Node* n = (*g)->FindNode("op");
  std::vector<Shape> out;
  for (int i = 0; i < n->num_outputs(); ++i) out.push_back(n->output_shape(i));
  return out;
}

// The single output shape of InferOp.
inline absl::StatusOr<Shape> InferOne(
    const std::string& op, const std::vector<TypedShape>& inputs,
    const std::map<std::string, AttrValue>& attrs = {}) {
  absl::StatusOr<std::vector<Shape>> out = InferOp(op, inputs, attrs);
  if (!out.ok()) return out.status();
  if (out->size() != 1) {
    return absl::InternalError("expected exactly one output");
  }
  return (*out)[0];
}

}  // namespace testing_util
}  // namespace sluice

#endif  // SLUICE_TESTS_GRAPH_TEST_UTIL_H_
