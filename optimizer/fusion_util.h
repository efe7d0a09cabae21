// Helpers the fusion passes share: reading a reduction's axes, taking a
// constant parameter in the shape a fused op wants, and putting one fused
// node in place of the nodes of a matched pattern.
//
//   std::optional<std::vector<int64_t>> axes = ReduceAxes(node, rank);
//   ReplacePattern(rw, pattern, std::move(fused), "LayerNorm", &changes);
//
// Stateless functions; thread-compatible (they write to the rewriter).
#ifndef SLUICE_OPTIMIZER_FUSION_UTIL_H_
#define SLUICE_OPTIMIZER_FUSION_UTIL_H_

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/graph.h"
#include "optimizer/graph_rewriter.h"

namespace sluice {

// A keepdims reduction's axes, made non-negative and sorted, for an input
// of rank `rank`; nullopt when keepdims is false, axes are empty (all) or
// the node is no such reduction.
inline std::optional<std::vector<int64_t>> ReduceAxes(const Node& n, int rank) {
  if (!n.attrs().GetBool("keepdims").value_or(false)) return std::nullopt;
  absl::StatusOr<std::vector<int64_t>> axes = n.attrs().GetIntList("axes");
  if (!axes.ok() || axes->empty()) return std::nullopt;
  for (int64_t& a : *axes) {
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return std::nullopt;
  }
  std::sort(axes->begin(), axes->end());
  return *axes;
}

// A constant parameter as a fused op wants it (shape `dims`, LayerNorm's
// gamma and beta, RMSNorm's scale): the Const itself, or a reshaped copy
// when only leading 1s differ (so broadcasting is the same); nullopt when
// `ref` is no such Const.
inline std::optional<std::variant<TensorRef, Tensor>> AffineParam(
    const Graph& g, TensorRef ref, const Shape& dims, DataType dtype) {
  const Tensor* t = ConstValueOf(g, ref);
  if (t == nullptr || t->dtype() != dtype || !t->on_host()) return std::nullopt;
  if (t->shape() == dims) return ref;
  absl::StatusOr<int64_t> want = dims.NumElements();
  if (!want.ok()) return std::nullopt;
  auto strip = [](const Shape& s) {
    std::vector<int64_t> d(s.dims().begin(), s.dims().end());
    while (!d.empty() && d.front() == 1) d.erase(d.begin());
    return d;
  };
  if (strip(t->shape()) == strip(dims)) return t->Reshaped(dims);
  return std::nullopt;
}

// A tensor of `dims` filled with `value`.
inline absl::StatusOr<Tensor> Filled(DataType dtype, const Shape& dims,
                                     double value) {
  ASSIGN_OR_RETURN(Tensor one, ScalarConstTensor(dtype, value));
  ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, dims));
  const size_t size = one.bytes();
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    std::memcpy(static_cast<char*>(t.raw_data()) + i * size, one.raw_data(),
                size);
  }
  return t;
}

// Replaces the pattern's nodes (the last one is its result) with `fused`,
// which takes the last node's name and line (so fetches, graph outputs and
// errors still name it). Records one change line.
inline void ReplacePattern(GraphRewriter& rw, const std::vector<int>& pattern,
                           NewNode fused, std::vector<std::string>* changes) {
  const Graph& g = rw.graph();
  const Node& last = g.node(pattern.back());
  fused.name = last.name();
  fused.device = last.requested_device();
  fused.source_line = last.source_line();
  std::string names;
  for (int id : pattern) {
    absl::StrAppend(&names, names.empty() ? "" : ", ", "'", g.node(id).name(),
                    "'");
  }
  if (pattern.size() == 1) {  // a node that takes in what follows it
    changes->push_back(absl::StrCat("replaced ", names, " (", last.op(),
                                    ") with ", fused.op, " '", fused.name,
                                    "'"));
  } else {
    changes->push_back(absl::StrCat("fused ", pattern.size(), " nodes (", names,
                                    ") into ", fused.op, " '", fused.name,
                                    "'"));
  }
  for (size_t i = 0; i + 1 < pattern.size(); ++i) rw.Remove(pattern[i]);
  rw.Replace(pattern.back(), std::move(fused));
}

// Whether node `last`'s result has x's rank (both known), so the fused op,
// which keeps x's shape, gives what the pattern gave (a constant of higher
// rank would have broadcast x up).
inline bool KeepsRank(const Graph& g, int last, TensorRef x) {
  const Shape& a = g.node(last).output_shape(0);
  const Shape& b = g.node(x.node).output_shape(x.port);
  return !a.unknown_rank() && !b.unknown_rank() && a.rank() == b.rank();
}

// A two-input Add reading `ref` on one side and producing `shape`.
inline bool IsAddOf(const Graph& g, int id, TensorRef ref, const Shape& shape) {
  const Node& n = g.node(id);
  return n.op() == "Add" && n.num_inputs() == 2 &&
         OtherOperand(n, ref).has_value() && n.output_shape(0) == shape;
}

// Whether none of the pattern's nodes has control inputs.
inline bool NoControlInputs(const Graph& g, const std::vector<int>& pattern) {
  for (int id : pattern) {
    if (!g.node(id).control_inputs().empty()) return false;
  }
  return true;
}

}  // namespace sluice

#endif  // SLUICE_OPTIMIZER_FUSION_UTIL_H_
