// GraphEmitter: writes sluice nodes into a GraphDef while tracking, for each
// value, its dtype, its (possibly partial) shape and, when known at import
// time, its constant value. Every node goes through the op registry's schema
// and shape function as it is emitted, so the importer always knows the
// shapes a later ONNX Shape node would read; a node whose inputs are all
// constants is folded on its CPU kernel (kernels/evaluate.h) instead of
// emitted. Constants become
// Const nodes only when an emitted node reads them.
//
//   GraphEmitter em(&def);
//   ASSIGN_OR_RETURN(ValuePtr x, em.AddInput("x", DT_FLOAT, Shape({1, 4})));
//   ValuePtr w = em.AddConstant(weights, "w");
//   ASSIGN_OR_RETURN(ValuePtr y, em.Emit1("MatMul", "fc", {x, w}));
//
// Used by one thread at a time.
#ifndef SLUICE_ONNX_GRAPH_EMITTER_H_
#define SLUICE_ONNX_GRAPH_EMITTER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/resource_limits.h"
#include "core/shape.h"
#include "core/tensor.h"
#include "proto/graph.pb.h"

namespace sluice {

// One value of the graph being built. Shared between the importer's ONNX
// name table and the handlers; a constant's `ref` is filled in when it is
// first materialised as a Const node.
struct ValueData {
  std::string ref;  // "node" or "node:port"; empty for an unmaterialised
                    // constant
  DataType dtype = DT_INVALID;
  Shape shape = Shape::UnknownRank();
  std::optional<Tensor> constant;  // the value, when known at import time
  std::string name_hint;           // for the Const node's name
  // Where `constant`'s bytes are in a weights file (path relative to the
  // model's folder), for an initializer used as it is in the file: its Const
  // node then refers to the range instead of holding a copy, and the
  // GraphDef must be built with base_dir = the model's folder. Values made
  // by folding never have it.
  std::optional<ExternalData> external;
};
using ValuePtr = std::shared_ptr<ValueData>;

using AttrList = std::map<std::string, AttrValue>;

class GraphEmitter {
 public:
  // `def`, `limits` and `fold_budget` are borrowed and must outlive the
  // emitter. `limits` (core/resource_limits.h) bounds the constants the
  // importer makes; `fold_budget` (may be null: one of its own, from
  // `limits`) is what folding may still create, shared by the emitters of a
  // model and its subgraphs.
  explicit GraphEmitter(GraphDef* def,
                        const ResourceLimits& limits = kDefaultLimits,
                        FoldBudget* fold_budget = nullptr)
      : def_(def),
        limits_(&limits),
        own_budget_(limits),
        fold_budget_(fold_budget != nullptr ? fold_budget : &own_budget_) {}

  const ResourceLimits& limits() const { return *limits_; }
  FoldBudget* fold_budget() const { return fold_budget_; }

  // Constants the importer makes rather than reads from the file all come
  // through these two (or Emit's folding), so the limits are checked in one
  // place and before anything is allocated. `fill` writes every element of
  // the new (uninitialised) tensor.
  //
  // A constant the importer needs (a mask, an index table, a filled
  // tensor) for `what` (a node label or hint): over
  // limits().max_created_tensor_bytes it is RESOURCE_EXHAUSTED naming
  // `what` and the config field.
  absl::StatusOr<ValuePtr> CreateConstant(
      absl::string_view what, DataType dtype, const Shape& shape,
      absl::FunctionRef<void(Tensor&)> fill, absl::string_view name_hint);
  // A value a handler folds itself (ConstantOfShape, Range): made when the
  // fold limits allow (max_folded_constant_bytes, what is left of
  // max_folded_bytes, which it is charged), else nullptr: the handler then
  // emits the op as a node that computes it at run time.
  absl::StatusOr<ValuePtr> FoldConstant(DataType dtype, const Shape& shape,
                                        absl::FunctionRef<void(Tensor&)> fill,
                                        absl::string_view name_hint);

  // A node name not used yet, derived from `hint` (':' and '^' become '_',
  // since they mean ports and control inputs in sluice).
  std::string UniqueName(absl::string_view hint);
  // Reserves `name` exactly. ALREADY_EXISTS when it is taken.
  absl::Status ReserveName(const std::string& name);

  // Adds an Input node named `name` (which must be unique).
  absl::StatusOr<ValuePtr> AddInput(const std::string& name, DataType dtype,
                                    const Shape& shape);
  // A constant value; no node is written until an emitted node reads it.
  ValuePtr AddConstant(Tensor value, absl::string_view name_hint);

  // Emits sluice op `op` (its node named after `name_hint`) reading
  // `inputs`, with `attrs` (type attributes bound to inputs may be left
  // out). Checks the inputs against the op's schema, runs its shape
  // function and returns one value per output. When every input is a
  // constant and the op is one the importer folds (on its CPU kernel,
  // kernels/evaluate.h), no node is written and the outputs are constants.
  absl::StatusOr<std::vector<ValuePtr>> Emit(
      const std::string& op, absl::string_view name_hint,
      const std::vector<ValuePtr>& inputs, const AttrList& attrs = {});
  // Emit for single-output ops.
  absl::StatusOr<ValuePtr> Emit1(const std::string& op,
                                 absl::string_view name_hint,
                                 const std::vector<ValuePtr>& inputs,
                                 const AttrList& attrs = {});

  // The reference a consumer uses for `value`, writing a Const node for a
  // constant the first time (holding the bytes, or for a value with
  // `external` referring to its weights file; with a value sink, neither).
  absl::StatusOr<std::string> Materialize(const ValuePtr& value);

  // With a sink, Materialize puts each constant's Tensor there under its
  // Const node's name, and the node's value holds only dtype and shape (and
  // the external range): the GraphDef is then built with the sink's values
  // (BuildGraphSharingConsts, graph/builder.h) and the weights are held
  // once, by those Tensors. Borrowed; must outlive the emitter's use.
  void set_value_sink(absl::flat_hash_map<std::string, Tensor>* sink) {
    value_sink_ = sink;
  }

  GraphDef* def() { return def_; }

 private:
  static const ResourceLimits kDefaultLimits;

  GraphDef* def_;  // not owned
  const ResourceLimits* limits_;  // not owned
  FoldBudget own_budget_;     // when none is given
  FoldBudget* fold_budget_;   // not owned, or &own_budget_
  absl::flat_hash_set<std::string> names_;
  absl::flat_hash_map<std::string, Tensor>* value_sink_ = nullptr;  // borrowed
};

// `name` with ':' and '^' replaced by '_' ("node" when empty): a valid
// sluice node name.
std::string SanitizeNodeName(absl::string_view name);

// Constants of one element, for handlers: a scalar of `dtype` holding `v`.
Tensor ScalarTensor(DataType dtype, double v);
// Writes `one` (one element of t's dtype) into every element of `t`: a
// `fill` for GraphEmitter::CreateConstant.
void FillWith(const Tensor& one, Tensor& t);
// A rank-1 int64 tensor.
Tensor Int64Vector(const std::vector<int64_t>& values);
// The elements of an integer (int8/32/64, uint8) or bool tensor as int64.
absl::StatusOr<std::vector<int64_t>> ToInt64s(const Tensor& t);
// The elements of any numeric tensor as double.
absl::StatusOr<std::vector<double>> ToDoubles(const Tensor& t);

}  // namespace sluice

#endif  // SLUICE_ONNX_GRAPH_EMITTER_H_
