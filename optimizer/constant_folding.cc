// constant_folding: a node whose data inputs are all constants (Const
// nodes, or nodes folded earlier in this pass) runs once on its CPU kernel
// and becomes a Const of the same name. Not folded: Input and Const,
// nondeterministic ops, control flow (nodes holding subgraphs), nodes with
// control inputs or several outputs, nodes with no CPU kernel, nodes whose
// kernel fails (the error stays for the step to report, naming the node),
// and nodes past the fold limits of PassOptions::limits (a result over
// max_folded_constant_bytes and also over its inputs' bytes together, or
// past max_folded_bytes folded in this run: core/resource_limits.h's
// FoldBudget, which the ONNX importer folds under too).
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "kernels/evaluate.h"
#include "kernels/kernel_registry.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

bool Foldable(const Node& n) {
  return n.op() != "Const" && n.op() != "Input" && n.num_inputs() > 0 &&
         n.num_outputs() == 1 && n.control_inputs().empty() &&
         !IsNondeterministicOp(n.op()) && !HasSubgraphs(n);
}

// The output's bytes when inference knows its shape; -1 otherwise.
int64_t KnownOutputBytes(const Node& n) {
  const Shape& s = n.output_shape(0);
  if (!s.IsFullyDefined()) return -1;
  absl::StatusOr<int64_t> count = s.NumElements();
  if (!count.ok()) return -1;
  return *count * static_cast<int64_t>(DataTypeSize(n.output_dtype(0)));
}

class ConstantFoldingPass final : public Pass {
 public:
  std::string_view name() const override { return "constant_folding"; }

  absl::StatusOr<PassOutput> Run(const Graph& graph,
                                 const PassOptions& options) const override {
    absl::flat_hash_map<int, Tensor> folded;
    auto value_of = [&](TensorRef ref) -> const Tensor* {
      if (const Tensor* t = ConstValueOf(graph, ref)) return t;
      auto it = folded.find(ref.node);
      return it == folded.end() ? nullptr : &it->second;
    };
    PassOutput out;
    GraphRewriter rw(graph);
    FoldBudget budget(options.limits);
    for (int id : graph.topological_order()) {
      const Node& n = graph.node(id);
      if (!Foldable(n)) continue;
      std::vector<Tensor> inputs;
      int64_t input_bytes = 0;
      for (const TensorRef& in : n.inputs()) {
        const Tensor* t = value_of(in);
        if (t == nullptr) break;
        inputs.push_back(*t);
        input_bytes += static_cast<int64_t>(t->bytes());
      }
      if (inputs.size() != static_cast<size_t>(n.num_inputs())) continue;
      const int64_t known = KnownOutputBytes(n);
      if (known >= 0 && !budget.Fits(known, known, input_bytes)) continue;
      if (!KernelRegistry::Global()->Has(n, DeviceType::kCpu)) continue;
      absl::StatusOr<std::vector<Tensor>> values = EvaluateOnCpu(n, inputs);
      if (!values.ok() || (*values)[0].dtype() != n.output_dtype(0)) continue;
      Tensor* value = &(*values)[0];
      const int64_t bytes = static_cast<int64_t>(value->bytes());
      if (!budget.Take(bytes, bytes, input_bytes)) continue;
      out.changes.push_back(absl::StrCat(
          "folded ", n.DebugName(), " into a ", DataTypeName(value->dtype()),
          value->shape().DebugString(), " constant"));
      rw.Replace(id, ConstNode(n.name(), *value, n.requested_device(),
                               n.source_line()));
      folded.emplace(id, *std::move(value));
    }
    if (!rw.changed()) return out;
    ASSIGN_OR_RETURN(out.graph, rw.Build());
    return out;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeConstantFoldingPass() {
  return std::make_unique<ConstantFoldingPass>();
}

}  // namespace sluice
