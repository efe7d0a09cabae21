// softmax_fusion: softmax over one axis as exporters write it,
//   e = Exp(Sub(x, ReduceMax(x, [a], keepdims)))   (or Exp(x))
//   y = Div(e, ReduceSum(e, [a], keepdims))
// becomes Softmax(x, axis=a) named after the Div. Without the max the
// pattern overflows where Softmax does not; where it does not overflow the
// two agree. Every node but the Div must have no reader outside the
// pattern.
#include <optional>
#include <set>
#include <vector>

#include "core/status_macros.h"
#include "optimizer/fusion_util.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

class SoftmaxFusionPass final : public Pass {
 public:
  std::string_view name() const override { return "softmax_fusion"; }

  absl::StatusOr<PassOutput> Run(const Graph& g,
                                 const PassOptions&) const override {
    PassOutput out;
    GraphRewriter rw(g);
    std::set<int> used;
    for (const Node& exp : g.nodes()) {
      if (exp.op() != "Exp" || !IsFloatType(exp.output_dtype(0))) continue;
      const Shape& shape = exp.output_shape(0);
      if (shape.unknown_rank()) continue;
      const int rank = shape.rank();
      std::vector<int> pattern;
      TensorRef x = exp.input(0);
      std::optional<std::vector<int64_t>> max_axes;
      const Node& sub = g.node(x.node);
      if (sub.op() == "Sub" && HasSoleReader(g, sub.id())) {
        const Node& mx = g.node(sub.input(1).node);
        if (mx.op() == "ReduceMax" && mx.input(0) == sub.input(0) &&
            HasSoleReader(g, mx.id())) {
          max_axes = ReduceAxes(mx, rank);
          if (!max_axes || max_axes->size() != 1) continue;
          pattern = {mx.id(), sub.id()};
          x = sub.input(0);
        }
      }
      pattern.push_back(exp.id());
      // Exp's readers: the ReduceSum and the Div, nothing else.
      if (IsGraphOutput(g, {exp.id(), 0}) ||
          !g.control_consumers(exp.id()).empty() ||
          g.consumers(exp.id(), 0).size() != 2) {
        continue;
      }
      int sum = -1, div = -1;
      for (const Consumer& c : g.consumers(exp.id(), 0)) {
        const Node& r = g.node(c.node);
        if (r.op() == "ReduceSum") sum = c.node;
        if (r.op() == "Div" && c.input == 0) div = c.node;
      }
      if (sum < 0 || div < 0 || SoleReader(g, sum) != div ||
          !(g.node(div).input(1) == TensorRef{sum, 0})) {
        continue;
      }
      std::optional<std::vector<int64_t>> axes = ReduceAxes(g.node(sum), rank);
      if (!axes || axes->size() != 1 || (max_axes && *max_axes != *axes)) {
        continue;
      }
      pattern.push_back(sum);
      pattern.push_back(div);
      if (!NoControlInputs(g, pattern) || !KeepsRank(g, div, x)) continue;
      bool overlap = false;
      for (int id : pattern) overlap = overlap || used.count(id) > 0;
      if (overlap) continue;
      used.insert(pattern.begin(), pattern.end());
      NewNode softmax;
      softmax.op = "Softmax";
      softmax.attrs["axis"] = MakeIntAttr((*axes)[0]);
      softmax.inputs.push_back(x);
      ReplacePattern(rw, pattern, std::move(softmax), &out.changes);
    }
    if (!rw.changed()) return out;
    ASSIGN_OR_RETURN(out.graph, rw.Build());
    return out;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeSoftmaxFusionPass() {
  return std::make_unique<SoftmaxFusionPass>();
}

}  // namespace sluice
