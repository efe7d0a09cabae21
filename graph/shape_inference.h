// InferenceContext: what a shape function sees of one node: its inputs'
// dtypes and (partial) shapes, their values when known at load time (Const
// inputs), and its attributes. It sets each output's shape; output dtypes
// come from the op's type attributes and are set before the function runs.
//
//   absl::Status ReluShape(InferenceContext& c) {
//     c.set_output_shape(0, c.input_shape(0));
//     return absl::OkStatus();
//   }
//
// Used by one thread at a time, during graph building.
#ifndef SLUICE_GRAPH_SHAPE_INFERENCE_H_
#define SLUICE_GRAPH_SHAPE_INFERENCE_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "graph/attr_map.h"

namespace sluice {

class Graph;  // graph/graph.h
using SubgraphMap =
    std::map<std::string, std::shared_ptr<const Graph>, std::less<>>;

class InferenceContext {
 public:
  // All pointers are borrowed and must outlive the context.
  InferenceContext(const AttrMap* attrs, std::vector<DataType> input_dtypes,
                   std::vector<Shape> input_shapes,
                   std::vector<const Tensor*> input_values,
                   std::vector<DataType> output_dtypes)
      : attrs_(attrs),
        input_dtypes_(std::move(input_dtypes)),
        input_shapes_(std::move(input_shapes)),
        input_values_(std::move(input_values)),
        output_dtypes_(std::move(output_dtypes)),
        output_shapes_(output_dtypes_.size(), Shape::UnknownRank()) {}

  int num_inputs() const { return static_cast<int>(input_shapes_.size()); }
  int num_outputs() const { return static_cast<int>(output_dtypes_.size()); }
  DataType input_dtype(int i) const { return input_dtypes_[i]; }
  const Shape& input_shape(int i) const { return input_shapes_[i]; }
  // The input's value when known at build time (a Const), else nullptr.
  const Tensor* input_value(int i) const {
    if (input_values_[i] == nullptr && make_value_ && !tried_[i]) {
      tried_[i] = true;
      made_[i] = make_value_(i);
      if (made_[i].has_value()) input_values_[i] = &*made_[i];
    }
    return input_values_[i];
  }
  // For a graph built only to be described (ConstValues::kDescribeSplats,
  // graph/loader.h), whose large splats are not made: `make(i)` makes input
  // i's value, or returns nullopt when it is not a described Const. Called
  // once per input, when the shape function asks for that input's value,
  // so inference sees what it sees in a graph built to run, and only a
  // function that reads a large splat (Gather's indices) pays for it. The
  // value lives as long as the context.
  void set_value_maker(std::function<std::optional<Tensor>(int)> make) {
    make_value_ = std::move(make);
    made_.resize(input_values_.size());
    tried_.assign(input_values_.size(), false);
  }
  const AttrMap& attrs() const { return *attrs_; }
  // The validated subgraph of graph attribute `attr` (control-flow ops), or
  // nullptr when there is none.
  const Graph* subgraph(std::string_view attr) const {
    if (subgraphs_ == nullptr) return nullptr;
    auto it = subgraphs_->find(attr);
    return it == subgraphs_->end() ? nullptr : it->second.get();
  }
  // `subgraphs` is borrowed and must outlive the context.
  void set_subgraphs(const SubgraphMap* subgraphs) { subgraphs_ = subgraphs; }

  DataType output_dtype(int i) const { return output_dtypes_[i]; }
  void set_output_shape(int i, Shape shape) {
    output_shapes_[i] = std::move(shape);
  }
  const std::vector<Shape>& output_shapes() const { return output_shapes_; }

 private:
  const AttrMap* attrs_;
  std::vector<DataType> input_dtypes_;
  std::vector<Shape> input_shapes_;
  // Mutable: input_value makes described values on first use.
  mutable std::vector<const Tensor*> input_values_;
  std::function<std::optional<Tensor>(int)> make_value_;
  mutable std::vector<std::optional<Tensor>> made_;
  mutable std::vector<bool> tried_;
  std::vector<DataType> output_dtypes_;
  std::vector<Shape> output_shapes_;
  const SubgraphMap* subgraphs_ = nullptr;
};

}  // namespace sluice

#endif  // SLUICE_GRAPH_SHAPE_INFERENCE_H_
