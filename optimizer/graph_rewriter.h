// GraphRewriter: what a pass uses to build its new graph from the old one.
// The pass says which nodes go, which readers read another tensor instead,
// and which nodes are replaced or added; Build() writes the GraphDef
// (surviving nodes keep their names, attributes, devices and source lines,
// and Const values are shared, not decoded again:
// GraphBuilder::ShareConstValues) and
// validates it with BuildGraph.
//
//   GraphRewriter rw(graph);
//   rw.Forward({dup, 0}, {kept, 0});   // readers of dup:0 read kept:0
//   rw.Remove(dup);
//   ASSIGN_OR_RETURN(std::unique_ptr<const Graph> next, rw.Build());
//
// Single use; not thread-safe. Borrows the graph, which must outlive Build().
#ifndef SLUICE_OPTIMIZER_GRAPH_REWRITER_H_
#define SLUICE_OPTIMIZER_GRAPH_REWRITER_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "graph/graph.h"
#include "graph/loader.h"
#include "proto/graph.pb.h"

namespace sluice {

// A node a pass adds or puts in place of an old one. Inputs are old tensors
// (forwarding applies to them) or the names of new nodes.
struct NewNode {
  std::string name;
  std::string op;
  std::map<std::string, AttrValue> attrs;
  std::vector<std::variant<TensorRef, std::string>> inputs;
  std::string device;           // requested device, usually the old node's
  std::optional<Tensor> value;  // Const: the value (attrs get it too)
  int source_line = 0;          // for errors: the line it stands for
};

class GraphRewriter {
 public:
  explicit GraphRewriter(const Graph& graph);

  const Graph& graph() const { return graph_; }

  // Drops node `id`. Whoever read its outputs must have been forwarded,
  // or Build fails (INTERNAL, naming the reader).
  void Remove(int id);
  bool removed(int id) const { return removed_.contains(id); }
  // Readers of `from` (data inputs and graph outputs) read `to` instead;
  // when from's node is removed, its control consumers wait for to's node.
  void Forward(TensorRef from, TensorRef to);
  // Puts `node` in the place (file position) of old node `id`. Control
  // inputs are the old node's.
  void Replace(int id, NewNode node);
  // Adds `node` just before old node `before` in file order.
  void Add(int before, NewNode node);
  // Graph output `index` names `tensor` ("node" or "node:port", a new node's
  // name included) instead of its old tensor.
  void SetGraphOutput(int index, std::string tensor);
  // A node name no old or new node has, from `base`.
  std::string UniqueName(const std::string& base);

  bool changed() const {
    return !removed_.empty() || !forward_.empty() || !replaced_.empty() ||
           !added_.empty() || !outputs_.empty();
  }

  // The new graph, validated. INTERNAL when the edits leave a dangling
  // reference or the result does not validate (a bug in the pass).
  absl::StatusOr<std::unique_ptr<const Graph>> Build() const;

 private:
  // Follows forwarding from `ref` to the tensor readers now read.
  TensorRef Resolve(TensorRef ref) const;
  absl::StatusOr<std::string> InputString(TensorRef ref) const;
  using ConstValues = absl::flat_hash_map<std::string, Tensor>;
  absl::Status Emit(const NewNode& node, const std::vector<int>& control,
                    GraphDef* def, GraphSource* source,
                    ConstValues* const_values) const;

  const Graph& graph_;
  absl::flat_hash_set<int> removed_;
  absl::flat_hash_map<TensorRef, TensorRef> forward_;
  std::map<int, NewNode> replaced_;
  std::map<int, std::vector<NewNode>> added_;  // by the node they precede
  absl::flat_hash_set<std::string> names_;     // new names handed out
  std::map<int, std::string> outputs_;         // SetGraphOutput
};

// Small helpers the passes share.

// The value of the Const producing `ref`, or nullptr.
const Tensor* ConstValueOf(const Graph& graph, TensorRef ref);
// A one-element float or integer Const as a double.
std::optional<double> ScalarConstOf(const Graph& graph, TensorRef ref);
// Whether `ref` is named by a graph output.
bool IsGraphOutput(const Graph& graph, TensorRef ref);
// Whether node `id` has one output, read by exactly one data input and by
// nothing else (no control edge, no graph output): safe to fold into its
// reader.
bool HasSoleReader(const Graph& graph, int id);
// Ops whose results are not a function of their inputs (random draws):
// never folded, merged or moved. The op set has none yet; the names of
// ONNX's and TensorFlow's random ops are listed so that adding one cannot
// silently make it foldable.
bool IsNondeterministicOp(const std::string& op);
// Whether the node holds subgraphs (If, Loop, Scan).
bool HasSubgraphs(const Node& node);
// The node that alone reads node `id` (HasSoleReader), or -1.
int SoleReader(const Graph& graph, int id);
// For a two-input node reading `ref` on exactly one side: the other input.
std::optional<TensorRef> OtherOperand(const Node& node, TensorRef ref);
// Whether `ref` is a one-element Const within a relative 1e-4 of `want`.
bool IsScalarNear(const Graph& graph, TensorRef ref, double want);
// float16, bfloat16, float32, float64: the dtypes of the fused ops.
bool IsFloatType(DataType dtype);
// A scalar Const of `dtype` (float types and int32/int64), for NewNode.
absl::StatusOr<Tensor> ScalarConstTensor(DataType dtype, double value);
// A Const NewNode holding `value`.
NewNode ConstNode(std::string name, Tensor value, std::string device,
                  int source_line);

}  // namespace sluice

#endif  // SLUICE_OPTIMIZER_GRAPH_REWRITER_H_
