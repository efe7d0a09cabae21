// GraphBuilder: turns a GraphDef into a validated, immutable Graph, collecting
// every independent error on the way. BuildGraph and ValidateGraphDef
// (graph/loader.h) are the public entry points; this header is for them and
// for tests.
//
//   GraphBuilder b(def, source, OpRegistry::Global());
//   std::unique_ptr<Graph> g = b.Build();
//   if (g == nullptr) for (const absl::Status& e : b.errors()) ...
//
// What is checked, in order (later checks skip what earlier ones rejected, so
// one mistake gives one error):
//  1. format_version is 0 or 1.
//  2. Node names are non-empty, unique, and free of ':' and '^'.
//  3. Each op is known; attributes are known to the op, of the declared type
//     and, for type attributes, of an allowed dtype; defaults are filled in;
//     a list argument's count (Concat's N) is taken from the inputs when
//     absent; Const values decode (TensorFromProto; a splat is only
//     checked, SplatValue, when built with kDescribeSplats) and agree
//     with `dtype`.
//     Graph attributes (control-flow subgraphs) are built as graphs of
//     their own, with this builder's checks; their errors are the node's.
//  4. Inputs parse ("node", "node:port", "^node"), control inputs come last,
//     name existing nodes and valid ports, and their number matches the op.
//  5. No cycles (the error lists one cycle per strongly connected group);
//     the topological order is Kahn's with ties in file order.
//  6. In that order: type attributes bound to inputs are taken from them
//     (and must agree and be allowed); fixed-type inputs match; the shape
//     function gives each output's shape.
//  7. The signature: inputs name Input nodes, and every Input node is listed
//     (when signature.inputs is empty, every Input node becomes an input, in
//     file order); outputs name valid tensors ("node" or "node:port"; an
//     empty `tensor` means `name`) and agree with inference where they give a
//     dtype or shape. With no outputs listed, every output of every node that
//     nothing consumes (by data or control edge) is an output, named "node"
//     for port 0 and "node:port" otherwise.
// Every error reads "node 'fc1' (MatMul) at line 12: ..." (Node::DebugName)
// or "signature output 'y': ...".
//
// Single use; not thread-safe. Borrows def, source and registry, which must
// outlive Build().
#ifndef SLUICE_GRAPH_BUILDER_H_
#define SLUICE_GRAPH_BUILDER_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "graph/graph.h"
#include "graph/loader.h"
#include "graph/op_registry.h"
#include "graph/shape_inference.h"

namespace sluice {

// The newest GraphDef.format_version this build reads.
inline constexpr int kGraphFormatVersion = 1;

class GraphBuilder {
 public:
  GraphBuilder(const GraphDef& def, const GraphSource& source,
               const OpRegistry* registry,
               ConstValues const_values = ConstValues::kMake);

  // Values of Const nodes already decoded, by node name: Build uses them
  // instead of decoding `value` again, after checking that dtype and shape
  // agree. Optimisation passes (optimizer/graph_rewriter.h) rebuild graphs
  // this way, so every graph shares its weights' buffers. Borrowed; must
  // outlive Build().
  void ShareConstValues(const absl::flat_hash_map<std::string, Tensor>* values) {
    const_values_ = values;
  }

  // The graph, or nullptr when errors() is non-empty.
  std::unique_ptr<Graph> Build();
  const std::vector<absl::Status>& errors() const { return errors_; }

 private:
  struct NodeState {
    const NodeDef* def = nullptr;
    const OpDef* op = nullptr;  // nullptr: unknown op
    int line = 0;
    bool duplicate = false;  // a later node of an existing name: ignored
    bool ok = true;          // no error reported for this node
    bool inferred = false;   // output dtypes and shapes are known
    std::map<std::string, AttrValue, std::less<>> attrs;
    std::vector<TensorRef> inputs;
    std::vector<int> control_inputs;
    std::vector<int> successors;  // data and control consumers, per edge
    int num_outputs = -1;         // -1: unknown (op or attrs broken)
    std::vector<DataType> output_dtypes;
    std::vector<Shape> output_shapes;
    std::optional<Tensor> value;  // Const only
    bool described = false;       // a Const whose value is not made
    SubgraphMap subgraphs;        // graph attributes, validated
  };

  // "node 'x' (Op) at line N".
  std::string NodeLabel(int id) const;
  void NodeError(int id, const absl::Status& status);
  void NodeError(int id, const std::string& message);
  void Error(absl::StatusCode code, const std::string& message);

  void CheckVersion();
  void IndexNodes();
  void ResolveAttrs(int id);
  void ResolveConst(int id);
  void BuildSubgraphs(int id);
  void ResolveInputs(int id);
  void CheckInputCount(int id);
  void SortTopologically();
  void ReportCycles(const std::vector<int>& remaining);
  void Infer(int id);
  bool InferTypes(int id, std::vector<DataType>* input_dtypes);
  void ResolveSignature();
  std::unique_ptr<Graph> Assemble();

  const GraphDef& def_;
  const GraphSource& source_;
  const OpRegistry* registry_;
  const ConstValues const_value_mode_;
  const absl::flat_hash_map<std::string, Tensor>* const_values_ = nullptr;
  std::vector<NodeState> nodes_;
  absl::flat_hash_map<std::string, int> index_;
  std::vector<int> topo_order_;
  std::vector<GraphInput> inputs_;
  std::vector<GraphOutput> outputs_;
  std::vector<absl::Status> errors_;
};

// BuildGraph (graph/loader.h) with GraphBuilder::ShareConstValues.
absl::StatusOr<std::unique_ptr<const Graph>> BuildGraphSharingConsts(
    const GraphDef& def, const GraphSource& source,
    const absl::flat_hash_map<std::string, Tensor>& const_values);

}  // namespace sluice

#endif  // SLUICE_GRAPH_BUILDER_H_
