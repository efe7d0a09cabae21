// shape_simplification: what the runtime-parameter ops (docs/ops.md,
// "Runtime parameters") compute every step becomes static where the graph
// already knows it:
//  - Shape and Size of an input whose (needed) dimensions inference knows
//    become int64 Consts of the same name;
//  - DynamicReshape, DynamicExpand, DynamicSqueeze, DynamicUnsqueeze,
//    DynamicSlice and the DynamicReduce* ops whose parameter inputs are
//    Consts become Reshape, Expand, Squeeze, Unsqueeze, Slice and Reduce*
//    with those values as attributes (same name), which need no host
//    round trip on a GPU. DynamicReshape with a 0 in its shape and
//    allowzero false (0 copies the input's dimension) stays.
// The parameter Consts left unread go in dead_nodes.
#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/runtime_params.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

// An int64 Const's values.
std::optional<std::vector<int64_t>> IntsOf(const Graph& g, TensorRef ref) {
  const Tensor* t = ConstValueOf(g, ref);
  if (t == nullptr || t->dtype() != DT_INT64 || !t->on_host()) {
    return std::nullopt;
  }
  const int64_t* p = t->data<int64_t>();
  return std::vector<int64_t>(p, p + t->NumElements());
}

// The node as a static op with `attrs` reading only input 0.
NewNode StaticForm(const Node& n, const std::string& op,
                   std::map<std::string, AttrValue> attrs) {
  NewNode out;
  out.name = n.name();
  out.op = op;
  out.device = n.requested_device();
  out.source_line = n.source_line();
  out.attrs = std::move(attrs);
  out.attrs["T"] = MakeTypeAttr(n.input_dtype(0));
  out.inputs.push_back(n.input(0));
  return out;
}

std::optional<NewNode> Simplify(const Graph& g, const Node& n) {
  const Shape& in = n.num_inputs() > 0 ? n.input_shape(0) : Shape();
  if (n.op() == "Shape" && !in.unknown_rank()) {
    int64_t b = 0, e = 0;
    ShapeSliceBounds(in.rank(), n.attrs().GetInt("start").value_or(0),
                     n.attrs().GetInt("end").value_or(in.rank()), &b, &e);
    std::vector<int64_t> dims;
    for (int64_t i = b; i < e; ++i) {
      if (in.dim(i) < 0) return std::nullopt;
      dims.push_back(in.dim(i));
    }
    return ConstNode(n.name(),
                     Tensor::FromVector<int64_t>(
                         dims, Shape({static_cast<int64_t>(dims.size())})),
                     n.requested_device(), n.source_line());
  }
  if (n.op() == "Size" && in.IsFullyDefined()) {
    absl::StatusOr<int64_t> count = in.NumElements();
    if (!count.ok()) return std::nullopt;
    return ConstNode(n.name(), Tensor::Scalar<int64_t>(*count),
                     n.requested_device(), n.source_line());
  }
  if (n.op() == "DynamicReshape") {
    auto shape = IntsOf(g, n.input(1));
    if (!shape) return std::nullopt;
    const bool allowzero = n.attrs().GetBool("allowzero").value_or(false);
    for (int64_t d : *shape) {
      if (d == 0 && !allowzero) return std::nullopt;
    }
    return StaticForm(n, "Reshape", {{"shape", MakeIntListAttr(*shape)}});
  }
  if (n.op() == "DynamicExpand" || n.op() == "DynamicSqueeze" ||
      n.op() == "DynamicUnsqueeze") {
    auto values = IntsOf(g, n.input(1));
    if (!values) return std::nullopt;
    const std::string op = n.op().substr(7);
    return StaticForm(
        n, op, {{op == "Expand" ? "shape" : "axes", MakeIntListAttr(*values)}});
  }
  if (n.op() == "DynamicSlice") {
    std::vector<std::vector<int64_t>> params;
    for (int i = 1; i <= 4; ++i) {
      auto v = IntsOf(g, n.input(i));
      if (!v) return std::nullopt;
      params.push_back(*v);
    }
    return StaticForm(n, "Slice",
                      {{"begin", MakeIntListAttr(params[0])},
                       {"end", MakeIntListAttr(params[1])},
                       {"axes", MakeIntListAttr(params[2])},
                       {"steps", MakeIntListAttr(params[3])}});
  }
  if (absl::StartsWith(n.op(), "DynamicReduce")) {
    auto axes = IntsOf(g, n.input(1));
    if (!axes) return std::nullopt;
    const bool keepdims = n.attrs().GetBool("keepdims").value_or(true);
    if (axes->empty() &&
        n.attrs().GetBool("noop_with_empty_axes").value_or(false)) {
      return StaticForm(n, "Identity", {});
    }
    return StaticForm(n, n.op().substr(7),
                      {{"axes", MakeIntListAttr(*axes)},
                       {"keepdims", MakeBoolAttr(keepdims)}});
  }
  return std::nullopt;
}

class ShapeSimplificationPass final : public Pass {
 public:
  std::string_view name() const override { return "shape_simplification"; }

  absl::StatusOr<PassOutput> Run(const Graph& graph,
                                 const PassOptions&) const override {
    PassOutput out;
    GraphRewriter rw(graph);
    for (const Node& n : graph.nodes()) {
      std::optional<NewNode> simple = Simplify(graph, n);
      if (!simple) continue;
      out.changes.push_back(
          simple->op == "Const"
              ? absl::StrCat(n.DebugName(),
                             " is a constant: the shape is known")
              : absl::StrCat(n.DebugName(), " became ", simple->op,
                             ": its parameters are constants"));
      rw.Replace(n.id(), *std::move(simple));
    }
    if (!rw.changed()) return out;
    ASSIGN_OR_RETURN(out.graph, rw.Build());
    return out;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeShapeSimplificationPass() {
  return std::make_unique<ShapeSimplificationPass>();
}

}  // namespace sluice
