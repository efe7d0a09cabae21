// common_subexpressions: nodes that compute the same thing (same op,
// attributes, requested device, data inputs and control inputs; for Const,
// the same dtype, shape and bytes, up to 64 KiB) become one: the first in
// topological order stays and the others' readers read it. Not merged:
// Input nodes, nondeterministic ops, nodes holding subgraphs, and nodes
// that are graph outputs (their names stay fetchable).
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

constexpr size_t kMaxConstBytesCompared = 64 << 10;

bool Mergeable(const Graph& g, const Node& n) {
  if (n.op() == "Input" || n.num_outputs() == 0 ||
      IsNondeterministicOp(n.op()) || HasSubgraphs(n)) {
    return false;
  }
  for (int p = 0; p < n.num_outputs(); ++p) {
    if (IsGraphOutput(g, {n.id(), p})) return false;
  }
  if (const Tensor* v = n.const_value()) {
    return v->on_host() && v->bytes() <= kMaxConstBytesCompared;
  }
  return true;
}

class CommonSubexpressionPass final : public Pass {
 public:
  std::string_view name() const override { return "common_subexpressions"; }

  absl::StatusOr<PassOutput> Run(const Graph& graph,
                                 const PassOptions&) const override {
    PassOutput out;
    GraphRewriter rw(graph);
    // What each node's reader sees after merging: the kept node's id.
    std::vector<int> same_as(graph.num_nodes());
    for (int i = 0; i < graph.num_nodes(); ++i) same_as[i] = i;
    absl::flat_hash_map<std::string, int> seen;
    for (int id : graph.topological_order()) {
      const Node& n = graph.node(id);
      if (!Mergeable(graph, n)) continue;
      std::string key = absl::StrCat(n.op(), "|", n.requested_device(), "|");
      if (const Tensor* v = n.const_value()) {
        absl::StrAppend(&key, DataTypeName(v->dtype()),
                        v->shape().DebugString(), "|");
        key.append(static_cast<const char*>(v->raw_data()), v->bytes());
      } else {
        for (const auto& [name, value] : n.attrs().values()) {
          absl::StrAppend(&key, name, "=", value.SerializeAsString(), ";");
        }
      }
      absl::StrAppend(&key, "|");
      for (const TensorRef& in : n.inputs()) {
        absl::StrAppend(&key, same_as[in.node], ":", in.port, ",");
      }
      absl::StrAppend(&key, "|");
      for (int c : n.control_inputs()) absl::StrAppend(&key, same_as[c], ",");
      auto [it, inserted] = seen.try_emplace(std::move(key), id);
      if (inserted) continue;
      const int kept = it->second;
      same_as[id] = kept;
      for (int p = 0; p < n.num_outputs(); ++p) rw.Forward({id, p}, {kept, p});
      rw.Remove(id);
      out.changes.push_back(absl::StrCat(n.DebugName(), " merged into '",
                                         graph.node(kept).name(), "'"));
    }
    if (!rw.changed()) return out;
    ASSIGN_OR_RETURN(out.graph, rw.Build());
    return out;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeCommonSubexpressionPass() {
  return std::make_unique<CommonSubexpressionPass>();
}

}  // namespace sluice
