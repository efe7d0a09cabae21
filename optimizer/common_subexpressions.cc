// common_subexpressions: nodes that compute the same thing (same op,
// attributes, requested device, data inputs and control inputs; for Const,
// the same dtype, shape and bytes, whatever their size) become one: the
// first in topological order stays and the others' readers read it. Not
// merged: Input nodes, nondeterministic ops, nodes holding subgraphs, and
// nodes that are graph outputs (their names stay fetchable).
//
// Constants are compared by a fingerprint computed once per constant, and
// only for those whose dtype and shape another constant shares: a hash of
// their whole bytes up to kFullyHashedBytes, beyond that of three
// kSampleBytes windows (start, middle, end), so that telling 4 GiB of
// distinct weights apart reads 12 KiB of each, not 4 GiB. Equal
// fingerprints are confirmed by comparing the bytes. The pass is then
// linear in the graph, not in the weights, unless weights are equal.
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/status_macros.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

bool Mergeable(const Graph& g, const Node& n) {
  if (n.op() == "Input" || n.num_outputs() == 0 ||
      IsNondeterministicOp(n.op()) || HasSubgraphs(n)) {
    return false;
  }
  for (int p = 0; p < n.num_outputs(); ++p) {
    if (IsGraphOutput(g, {n.id(), p})) return false;
  }
  if (const Tensor* v = n.const_value()) return v->on_host();
  return true;
}

constexpr size_t kFullyHashedBytes = 64 << 10;
constexpr size_t kSampleBytes = 4 << 10;

// The constant's fingerprint (see the top of the file).
size_t Fingerprint(const Tensor& v) {
  const char* p = static_cast<const char*>(v.raw_data());
  const size_t n = v.bytes();
  if (n <= kFullyHashedBytes) return absl::HashOf(absl::string_view(p, n));
  const size_t mid = (n - kSampleBytes) / 2;
  return absl::HashOf(absl::string_view(p, kSampleBytes),
                      absl::string_view(p + mid, kSampleBytes),
                      absl::string_view(p + n - kSampleBytes, kSampleBytes));
}

// What two Consts that may be merged share: device, dtype and shape.
std::string ConstClass(const Node& n, const Tensor& v) {
  return absl::StrCat(n.requested_device(), "|", DataTypeName(v.dtype()),
                      v.shape().DebugString());
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
    // Constants of a class no other constant is in are never hashed.
    absl::flat_hash_map<std::string, int> class_size;
    for (const Node& n : graph.nodes()) {
      if (const Tensor* v = n.const_value(); v != nullptr && Mergeable(graph, n)) {
        ++class_size[ConstClass(n, *v)];
      }
    }
    // Key -> the kept nodes with that key: one for an op node; for Consts,
    // one per distinct content among equal fingerprints.
    absl::flat_hash_map<std::string, std::vector<int>> seen;
    for (int id : graph.topological_order()) {
      const Node& n = graph.node(id);
      if (!Mergeable(graph, n)) continue;
      std::string key = absl::StrCat(n.op(), "|", n.requested_device(), "|");
      const Tensor* v = n.const_value();
      if (v != nullptr) {
        const std::string cls = ConstClass(n, *v);
        if (class_size[cls] < 2) continue;
        absl::StrAppend(&key, cls, "|", Fingerprint(*v), "|");
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
      std::vector<int>& kept_ids = seen[key];
      int kept = -1;
      for (int k : kept_ids) {
        if (v == nullptr || TensorsEqual(*v, *graph.node(k).const_value())) {
          kept = k;
          break;
        }
      }
      if (kept < 0) {
        kept_ids.push_back(id);
        continue;
      }
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
