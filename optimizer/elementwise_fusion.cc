// elementwise_fusion: chains of elementwise ops that no pattern fusion
// covers become one FusedElementwise node (graph/elementwise_program.h),
// one kernel instead of one per op: MobileNetV2's ReLU6 exported as
// Maximum/Minimum, DenseNet's pre-activation BatchNorm (Mul, Add, Relu),
// the bias, scale and mask chains of transformers.
//
// A group is a set of at least two elementwise nodes (the ops a program can
// hold: Neg, Abs, Relu, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Erf, Add,
// Sub, Mul, Div, Pow, Maximum, Minimum) of one float dtype and one
// requested device, whose values other than the last (the root) are read
// only inside the group and are not graph outputs; so the group has one
// output, its root's. Groups grow from each root towards the inputs,
// visiting nodes in reverse topological order: a node joins the group of
// its readers when they all belong to one group. Left alone: nodes with
// control edges, nodes of unknown rank, groups whose output is not the
// broadcast of their inputs (it always is for ops that broadcast; the
// check guards the rewrite) or that read more than kMaxElementwiseInputs
// tensors, and every op the other fusions make (Gelu, LayerNorm, RMSNorm,
// Softmax, FusedConv2D are not program ops), which run before this pass. Inside
// If, Loop and Scan subgraphs nothing changes (no pass looks there).
//
// The fused node takes the root's name, device and line; its inputs are
// the tensors the group reads from outside, each once, in the order the
// group first reads them.
#include <map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "graph/elementwise_program.h"
#include "graph/shape_fns.h"
#include "optimizer/fusion_util.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"

namespace sluice {
namespace {

// Whether node `id` may be in a group at all.
bool IsCandidate(const Graph& g, int id) {
  const Node& n = g.node(id);
  if (!ElementwiseOpcodeOf(n.op()) || n.num_outputs() != 1 ||
      HasSubgraphs(n) || !IsFloatType(n.output_dtype(0)) ||
      n.output_shape(0).unknown_rank() || !n.control_inputs().empty() ||
      !g.control_consumers(id).empty()) {
    return false;
  }
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (n.input_dtype(i) != n.output_dtype(0) ||
        n.input_shape(i).unknown_rank()) {
      return false;
    }
  }
  return true;
}

// The group node `id` (a candidate) can join: the one all its readers are
// in, when they are, agree on dtype and device, and its value is no graph
// output; -1 otherwise.
int JoinableGroup(const Graph& g, int id, const std::vector<int>& group,
                  const std::vector<int>& roots) {
  if (IsGraphOutput(g, {id, 0})) return -1;
  absl::Span<const Consumer> readers = g.consumers(id, 0);
  if (readers.empty()) return -1;
  int target = -1;
  for (const Consumer& c : readers) {
    const int gc = group[c.node];
    if (gc < 0 || (target >= 0 && gc != target)) return -1;
    target = gc;
  }
  const Node& n = g.node(id);
  const Node& root = g.node(roots[target]);
  if (root.output_dtype(0) != n.output_dtype(0) ||
      root.requested_device() != n.requested_device()) {
    return -1;
  }
  return target;
}

// The FusedElementwise node for `members` (topological order, the root
// last), or nullopt when the group cannot be one (too many inputs, an
// output that is not the broadcast of the inputs).
std::optional<NewNode> FusedNode(const Graph& g,
                                 const std::vector<int>& members,
                                 std::string* program_text) {
  absl::flat_hash_map<int, int> index;  // member -> instruction
  for (size_t i = 0; i < members.size(); ++i) index[members[i]] = i;
  std::vector<TensorRef> inputs;
  absl::flat_hash_map<TensorRef, int> input_index;
  // Operands as instruction indices (>= 0) or ~input (< 0) until the
  // input count is known.
  std::vector<std::pair<int, int>> raw;
  std::vector<std::string> ops;
  for (int id : members) {
    const Node& n = g.node(id);
    ops.push_back(n.op());
    int operand[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
      if (i >= n.num_inputs()) {
        operand[i] = INT32_MIN;  // none
        continue;
      }
      const TensorRef ref = n.input(i);
      auto member = index.find(ref.node);
      if (member != index.end()) {
        operand[i] = member->second;
        continue;
      }
      auto [it, inserted] =
          input_index.try_emplace(ref, static_cast<int>(inputs.size()));
      if (inserted) inputs.push_back(ref);
      operand[i] = ~it->second;
    }
    raw.emplace_back(operand[0], operand[1]);
  }
  const int n_in = static_cast<int>(inputs.size());
  if (n_in > kMaxElementwiseInputs) return std::nullopt;
  std::vector<int64_t> operands;
  for (const auto& [a, b] : raw) {
    for (int k : {a, b}) {
      operands.push_back(k == INT32_MIN ? -1 : k < 0 ? ~k : n_in + k);
    }
  }
  absl::StatusOr<ElementwiseProgram> program =
      MakeElementwiseProgram(n_in, ops, operands);
  if (!program.ok()) return std::nullopt;
  // The output must be the broadcast of the inputs.
  Shape broadcast = g.node(inputs[0].node).output_shape(inputs[0].port);
  for (const TensorRef& ref : inputs) {
    absl::StatusOr<Shape> b =
        BroadcastShapes(broadcast, g.node(ref.node).output_shape(ref.port));
    if (!b.ok()) return std::nullopt;
    broadcast = *std::move(b);
  }
  const Node& root = g.node(members.back());
  if (!(broadcast == root.output_shape(0))) return std::nullopt;
  NewNode fused;
  fused.op = "FusedElementwise";
  fused.attrs["T"] = MakeTypeAttr(root.output_dtype(0));
  fused.attrs["N"] = MakeIntAttr(n_in);
  fused.attrs["ops"] = MakeStringListAttr(ops);
  fused.attrs["operands"] = MakeIntListAttr(operands);
  for (const TensorRef& ref : inputs) fused.inputs.emplace_back(ref);
  *program_text = program->DebugString();
  return fused;
}

class ElementwiseFusionPass final : public Pass {
 public:
  std::string_view name() const override { return "elementwise_fusion"; }

  absl::StatusOr<PassOutput> Run(const Graph& g,
                                 const PassOptions&) const override {
    std::vector<int> group(g.num_nodes(), -1);
    std::vector<int> roots;  // group -> its root
    absl::Span<const int> topo = g.topological_order();
    for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
      const int id = *it;
      if (!IsCandidate(g, id)) continue;
      const int target = JoinableGroup(g, id, group, roots);
      if (target >= 0) {
        group[id] = target;
      } else {
        group[id] = static_cast<int>(roots.size());
        roots.push_back(id);
      }
    }
    std::vector<std::vector<int>> members(roots.size());
    for (int id : topo) {
      if (group[id] >= 0) members[group[id]].push_back(id);
    }
    PassOutput out;
    GraphRewriter rw(g);
    for (const std::vector<int>& m : members) {
      if (m.size() < 2) continue;
      std::string program;
      std::optional<NewNode> fused = FusedNode(g, m, &program);
      if (!fused) continue;
      ReplacePattern(rw, m, *std::move(fused), &out.changes);
      absl::StrAppend(&out.changes.back(), ": ", program);
    }
    if (!rw.changed()) return out;
    ASSIGN_OR_RETURN(out.graph, rw.Build());
    return out;
  }
};

}  // namespace

std::unique_ptr<Pass> MakeElementwiseFusionPass() {
  return std::make_unique<ElementwiseFusionPass>();
}

}  // namespace sluice
