// Graph: a validated, immutable dataflow graph. Every node's op is known, its
// attributes are complete and typed, its inputs exist, there are no cycles,
// and every output has an inferred dtype and (possibly partial) shape.
// Graphs are built from a GraphDef by BuildGraph (graph/builder.h) or loaded
// from a file (graph/loader.h); passes build new graphs.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<const Graph> g, LoadGraph("mlp.pbtxt"));
//   for (int id : g->topological_order()) {
//     const Node& n = g->node(id);
//     ...
//   }
//
// Immutable after construction, but for one change its owner may make
// before anyone else reads it: a Const's value moved into a device's memory
// (MoveConstValue). Thread-safe to read.
#ifndef SLUICE_GRAPH_GRAPH_H_
#define SLUICE_GRAPH_GRAPH_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "graph/attr_map.h"
#include "graph/op_def.h"
#include "proto/graph.pb.h"

namespace sluice {

class Graph;

// One output of one node: "node:port".
struct TensorRef {
  int node = -1;
  int port = 0;
  friend bool operator==(const TensorRef& a, const TensorRef& b) {
    return a.node == b.node && a.port == b.port;
  }
  template <typename H>
  friend H AbslHashValue(H h, const TensorRef& r) {
    return H::combine(std::move(h), r.node, r.port);
  }
};

// A consumer of a node's output: node `node` reads it as its input `input`.
struct Consumer {
  int node = -1;
  int input = 0;
};

class Node {
 public:
  int id() const { return id_; }
  const std::string& name() const { return name_; }
  const std::string& op() const { return op_def_->name; }
  const OpDef& op_def() const { return *op_def_; }
  // The device the file requested ("/gpu:1", "/gpu:*"), or "".
  const std::string& requested_device() const { return requested_device_; }
  const AttrMap& attrs() const { return attrs_; }

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const TensorRef& input(int i) const { return inputs_[i]; }
  absl::Span<const TensorRef> inputs() const { return inputs_; }
  // Input i's inferred dtype and (possibly partial) shape: those of the
  // output it reads. What a kernel's capability check looks at.
  DataType input_dtype(int i) const { return input_dtypes_[i]; }
  const Shape& input_shape(int i) const { return input_shapes_[i]; }
  absl::Span<const int> control_inputs() const { return control_inputs_; }

  int num_outputs() const { return static_cast<int>(output_dtypes_.size()); }
  DataType output_dtype(int port) const { return output_dtypes_[port]; }
  const Shape& output_shape(int port) const { return output_shapes_[port]; }

  // Whether the node is a Const. Its dtype and shape are output_dtype(0)
  // and output_shape(0), whether or not its value was made.
  bool is_const() const { return op() == "Const"; }
  // For Const nodes, the value; nullptr for other nodes, and for a splat in
  // a graph built only to be described (ConstValues::kDescribeSplats,
  // graph/loader.h).
  const Tensor* const_value() const {
    return const_value_ ? &*const_value_ : nullptr;
  }
  // The validated subgraph held by graph attribute `attr` (If's
  // then_branch, Loop's body), or nullptr when the node has no such
  // attribute. The graph owns it.
  const Graph* subgraph(std::string_view attr) const {
    auto it = subgraphs_.find(attr);
    return it == subgraphs_.end() ? nullptr : it->second.get();
  }
  // 1-based line of the node in a text file; 0 when unknown.
  int source_line() const { return source_line_; }
  // "node 'fc1' (MatMul)", with " at line N" when the line is known.
  std::string DebugName() const;

 private:
  friend class GraphBuilder;  // graph/builder.cc fills nodes in
  friend class Graph;         // MoveConstValue
  int id_ = -1;
  std::string name_;
  const OpDef* op_def_ = nullptr;  // owned by the OpRegistry
  std::string requested_device_;
  AttrMap attrs_;
  std::vector<TensorRef> inputs_;
  std::vector<int> control_inputs_;
  std::vector<DataType> input_dtypes_;
  std::vector<Shape> input_shapes_;
  std::vector<DataType> output_dtypes_;
  std::vector<Shape> output_shapes_;
  std::optional<Tensor> const_value_;
  std::map<std::string, std::shared_ptr<const Graph>, std::less<>> subgraphs_;
  int source_line_ = 0;
};

// A graph input: an Input node, fed by the caller.
struct GraphInput {
  std::string name;
  int node = -1;
  DataType dtype = DT_INVALID;
  Shape shape;  // may be partial
};

// A graph output: a name for one node output.
struct GraphOutput {
  std::string name;
  TensorRef tensor;
  DataType dtype = DT_INVALID;
  Shape shape;  // may be partial
};

class Graph {
 public:
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  const Node& node(int id) const { return nodes_[id]; }
  const std::vector<Node>& nodes() const { return nodes_; }
  // nullptr when no node has that name.
  const Node* FindNode(std::string_view name) const;

  // Node ids such that every node comes after all its data and control
  // inputs. Stable: ties keep file order.
  absl::Span<const int> topological_order() const { return topo_order_; }
  // Who reads output `port` of node `id`.
  absl::Span<const Consumer> consumers(int id, int port) const {
    return consumers_[id][port];
  }
  // Nodes that list `id` as a control input.
  absl::Span<const int> control_consumers(int id) const {
    return control_consumers_[id];
  }

  const std::vector<GraphInput>& inputs() const { return inputs_; }
  const std::vector<GraphOutput>& outputs() const { return outputs_; }
  const GraphInput* FindInput(std::string_view name) const;
  const GraphOutput* FindOutput(std::string_view name) const;

  // The definition the graph was built from, with every attribute resolved,
  // for passes. A Const whose value was made keeps only its dtype and shape
  // (and external range) here and in its attrs(): the bytes are in
  // const_value() alone, so rebuilding from def() needs those values
  // (BuildGraphSharingConsts, graph/builder.h), and a file to save is made
  // from the loaded GraphDef, not from this.
  const GraphDef& def() const { return def_; }
  // Folder that external weights paths were resolved against ("" if none).
  const std::string& base_dir() const { return base_dir_; }

  // Makes `value`, of the same dtype and shape, Const node `id`'s value in
  // place of the one it had, which is released: for a session that owns
  // the graph and has moved a weight into the memory of the GPU that reads
  // it, so that the host copy is freed (executor/session.cc). Its value is
  // then not host memory (Tensor::on_host), and what reads it must be done
  // before the device that holds it goes. Errors: not a Const with a value,
  // or another dtype or shape.
  absl::Status MoveConstValue(int id, Tensor value);

 private:
  friend class GraphBuilder;
  std::vector<Node> nodes_;
  absl::flat_hash_map<std::string, int> index_;
  std::vector<int> topo_order_;
  std::vector<std::vector<std::vector<Consumer>>> consumers_;
  std::vector<std::vector<int>> control_consumers_;
  std::vector<GraphInput> inputs_;
  std::vector<GraphOutput> outputs_;
  GraphDef def_;
  std::string base_dir_;
};

// Parses "node", "node:port" or "^node".
struct ParsedInput {
  std::string node;
  int port = 0;
  bool control = false;
};
absl::StatusOr<ParsedInput> ParseInputString(std::string_view input);

}  // namespace sluice

#endif  // SLUICE_GRAPH_GRAPH_H_
