// dead_nodes: removes every node that no graph output needs, through data
// or control edges. Input nodes stay (the signature lists them and callers
// feed them), and so do nodes with no outputs (kept for their effect, should
// an op ever have one).
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

class DeadNodePass final : public Pass {
 public:
  std::string_view name() const override { return "dead_nodes"; }

  absl::StatusOr<PassOutput> Run(const Graph& graph,
                                 const PassOptions&) const override {
    std::vector<bool> needed(graph.num_nodes(), false);
    std::vector<int> stack;
    auto need = [&](int id) {
      if (!needed[id]) {
        needed[id] = true;
        stack.push_back(id);
      }
    };
    for (const GraphOutput& out : graph.outputs()) need(out.tensor.node);
    for (const Node& n : graph.nodes()) {
      if (n.op() == "Input" || n.num_outputs() == 0) need(n.id());
    }
    while (!stack.empty()) {
      const Node& n = graph.node(stack.back());
      stack.pop_back();
      for (const TensorRef& in : n.inputs()) need(in.node);
      for (int c : n.control_inputs()) need(c);
    }
    PassOutput out;
    GraphRewriter rw(graph);
    for (const Node& n : graph.nodes()) {
      if (needed[n.id()]) continue;
      rw.Remove(n.id());
      out.changes.push_back(absl::StrCat("removed ", n.DebugName()));
    }
    if (!rw.changed()) return out;
    ASSIGN_OR_RETURN(out.graph, rw.Build());
    return out;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeDeadNodePass() {
  return std::make_unique<DeadNodePass>();
}

}  // namespace sluice
