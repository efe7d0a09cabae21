// Helpers for the ONNX importer tests: models built here as ONNX protos
// and imported from their bytes.
//
//   onnx::ModelProto model = NewModel(/*opset=*/17);
//   AddInput(model.mutable_graph(), "x", {2, 3});
//   AddNode(model.mutable_graph(), "Relu", {"x"}, {"y"}, "relu");
//   AddOutput(model.mutable_graph(), "y");
//   absl::StatusOr<GraphDef> def = Import(model);
//
// The tests that use them live in namespace sluice::onnx_test (each in an
// unnamed namespace inside it), so they call them unqualified. Stateless;
// thread-safe.
#ifndef SLUICE_TESTS_ONNX_ONNX_TEST_UTIL_H_
#define SLUICE_TESTS_ONNX_ONNX_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "onnx/importer.h"
#include "onnx/onnx_pb.h"
#include "proto/graph.pb.h"

namespace sluice::onnx_test {

// Makes `model` import `domain` ("" for the default ONNX domain) at
// `version`.
inline void AddOpset(onnx::ModelProto* model, const std::string& domain,
                     int version) {
  onnx::OperatorSetIdProto* id = model->add_opset_import();
  id->set_domain(domain);
  id->set_version(version);
}

// An empty model of IR version 8 importing the default domain at `opset`.
inline onnx::ModelProto NewModel(int opset = 17) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  AddOpset(&model, "", opset);
  return model;
}

// A graph input of element type `elem` and static `dims`.
inline void AddInput(onnx::GraphProto* g, const std::string& name,
                     std::vector<int64_t> dims,
                     int elem = onnx::TensorProto::FLOAT) {
  onnx::ValueInfoProto* v = g->add_input();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

inline void AddOutput(onnx::GraphProto* g, const std::string& name) {
  g->add_output()->set_name(name);
}

inline onnx::NodeProto* AddNode(onnx::GraphProto* g, const std::string& op,
                                std::vector<std::string> in,
                                std::vector<std::string> out,
                                const std::string& name = "") {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& s : in) n->add_input(s);
  for (const auto& s : out) n->add_output(s);
  return n;
}

// ImportOnnxBytes of the serialized model, named "m" in messages.
inline absl::StatusOr<GraphDef> Import(const onnx::ModelProto& model,
                                       const std::string& base_dir = "",
                                       const OnnxImportOptions& options = {}) {
  return ImportOnnxBytes(model.SerializeAsString(), base_dir, options, "m");
}

}  // namespace sluice::onnx_test

#endif  // SLUICE_TESTS_ONNX_ONNX_TEST_UTIL_H_
