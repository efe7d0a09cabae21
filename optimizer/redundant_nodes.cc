// redundant_nodes: removes data movement that does nothing, and shortens
// chains of it:
//  - Identity, Cast to the dtype it already has, and a Concat of one input
//    (GPT-2's key/value cache with no past: Concat(K) along the sequence);
//  - a Transpose whose permutation (composed with the Transposes before it)
//    is the identity; otherwise Transpose∘Transpose becomes one Transpose
//    of the first one's input, with the composed permutation;
//  - Reshape, Squeeze and Unsqueeze whose output shape (fully known) is
//    the shape of the tensor before the chain of them; otherwise a Reshape
//    reads the tensor before a chain of Reshape/Squeeze/Unsqueeze directly
//    (only the element count matters to it).
// A removed node's readers read its source. An Identity that requests a
// device its input does not is kept (it is a copy someone placed). A node that
// is a graph output or has control inputs is not removed but becomes an
// Identity of its source, so its name and value stay. Nodes left unread go in
// dead_nodes.
#include <numeric>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

bool IsReshapeLike(const std::string& op) {
  return op == "Reshape" || op == "Squeeze" || op == "Unsqueeze";
}

// Transpose's permutation with [] (reverse) spelled out; nullopt when the
// rank is unknown or the attribute is odd.
std::optional<std::vector<int64_t>> PermOf(const Node& n) {
  absl::StatusOr<std::vector<int64_t>> perm = n.attrs().GetIntList("perm");
  if (!perm.ok()) return std::nullopt;
  const Shape& in = n.input_shape(0);
  if (perm->empty()) {
    if (in.unknown_rank()) return std::nullopt;
    perm->resize(in.rank());
    for (int i = 0; i < in.rank(); ++i) (*perm)[i] = in.rank() - 1 - i;
  }
  for (int64_t& p : *perm) {
    if (p < 0) p += static_cast<int64_t>(perm->size());
    if (p < 0 || p >= static_cast<int64_t>(perm->size())) return std::nullopt;
  }
  return *std::move(perm);
}

bool IsIdentityPerm(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

class RedundantNodePass final : public Pass {
 public:
  std::string_view name() const override { return "redundant_nodes"; }

  absl::StatusOr<PassOutput> Run(const Graph& graph,
                                 const PassOptions&) const override {
    PassOutput out;
    GraphRewriter rw(graph);
    // Per Transpose: the tensor before its chain of Transposes and the
    // permutation of the whole chain.
    absl::flat_hash_map<int, std::pair<TensorRef, std::vector<int64_t>>>
        perm_of;
    // Per Reshape/Squeeze/Unsqueeze: the tensor before its chain.
    absl::flat_hash_map<int, TensorRef> chain_src;

    // `n` computes the value of `src`: readers read src instead.
    auto bypass = [&](const Node& n, TensorRef src, const std::string& why) {
      if (IsGraphOutput(graph, {n.id(), 0}) || !n.control_inputs().empty()) {
        if (n.op() == "Identity") return;
        NewNode id;
        id.name = n.name();
        id.op = "Identity";
        id.device = n.requested_device();
        id.source_line = n.source_line();
        id.inputs.push_back(src);
        rw.Replace(n.id(), std::move(id));
        out.changes.push_back(
            absl::StrCat(n.DebugName(), " became an Identity: ", why));
        return;
      }
      rw.Forward({n.id(), 0}, src);
      rw.Remove(n.id());
      out.changes.push_back(absl::StrCat("removed ", n.DebugName(), ": ", why));
    };

    for (int id : graph.topological_order()) {
      const Node& n = graph.node(id);
      if (n.num_outputs() != 1 || n.num_inputs() < 1) continue;
      const TensorRef in = n.input(0);
      if (n.op() == "Identity") {
        // An Identity that asks for another device than its input is a
        // copy the user placed: it stays.
        const std::string& want = n.requested_device();
        if (!want.empty() && want != graph.node(in.node).requested_device()) {
          continue;
        }
        bypass(n, in, "an Identity");
      } else if (n.op() == "Cast" && n.input_dtype(0) == n.output_dtype(0)) {
        bypass(n, in, "a Cast to the same dtype");
      } else if (n.op() == "Concat" && n.num_inputs() == 1) {
        bypass(n, in, "a Concat of one input");
      } else if (n.op() == "Transpose") {
        std::optional<std::vector<int64_t>> perm = PermOf(n);
        if (!perm) continue;
        TensorRef src = in;
        std::vector<int64_t> total = *perm;
        if (auto it = perm_of.find(in.node); it != perm_of.end()) {
          src = it->second.first;
          const std::vector<int64_t>& inner = it->second.second;
          if (inner.size() != perm->size()) continue;
          for (size_t i = 0; i < perm->size(); ++i)
            total[i] = inner[(*perm)[i]];
        }
        perm_of[id] = {src, total};
        if (IsIdentityPerm(total)) {
          bypass(n, src,
                 src == in ? "identity permutation"
                           : "it undoes the Transposes before it");
        } else if (!(src == in)) {
          NewNode t;
          t.name = n.name();
          t.op = "Transpose";
          t.device = n.requested_device();
          t.source_line = n.source_line();
          t.attrs["perm"] = MakeIntListAttr(total);
          t.attrs["T"] = MakeTypeAttr(n.input_dtype(0));
          t.inputs.push_back(src);
          rw.Replace(id, std::move(t));
          out.changes.push_back(absl::StrCat(
              n.DebugName(), " now transposes '", graph.node(src.node).name(),
              "' directly with perm [", absl::StrJoin(total, ","), "]"));
        }
      } else if (IsReshapeLike(n.op())) {
        TensorRef src = in;
        if (auto it = chain_src.find(in.node); it != chain_src.end()) {
          src = it->second;
        }
        chain_src[id] = src;
        const Shape& src_shape = graph.node(src.node).output_shape(src.port);
        const Shape& out_shape = n.output_shape(0);
        if (src_shape.IsFullyDefined() && out_shape.IsFullyDefined() &&
            src_shape == out_shape) {
          bypass(n, src, "its output has its source's shape");
        } else if (n.op() == "Reshape" && !(src == in)) {
          NewNode r;
          r.name = n.name();
          r.op = "Reshape";
          r.device = n.requested_device();
          r.source_line = n.source_line();
          r.attrs["shape"] = *n.attrs().Find("shape");
          r.attrs["T"] = MakeTypeAttr(n.input_dtype(0));
          r.inputs.push_back(src);
          rw.Replace(id, std::move(r));
          out.changes.push_back(absl::StrCat(n.DebugName(), " now reshapes '",
                                             graph.node(src.node).name(),
                                             "' directly"));
        }
      }
    }
    if (!rw.changed()) return out;
    ASSIGN_OR_RETURN(out.graph, rw.Build());
    return out;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeRedundantNodePass() {
  return std::make_unique<RedundantNodePass>();
}

}  // namespace sluice
