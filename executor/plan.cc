#include "executor/plan.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "kernels/kernel_registry.h"

namespace sluice {
namespace {

// Marks the nodes the fetches need, walking back from them. A fed output
// cuts the walk: its producer is needed only if some other output of it is.
std::vector<bool> NeededNodes(
    const Graph& graph, const absl::flat_hash_set<TensorRef>& fed,
    const std::vector<TensorRef>& fetches) {
  std::vector<bool> needed(graph.num_nodes(), false);
  std::vector<int> stack;
  auto need = [&](int id) {
    if (!needed[id]) {
      needed[id] = true;
      stack.push_back(id);
    }
  };
  for (const TensorRef& f : fetches) {
    if (!fed.contains(f)) need(f.node);
  }
  while (!stack.empty()) {
    const Node& n = graph.node(stack.back());
    stack.pop_back();
    for (const TensorRef& in : n.inputs()) {
      if (!fed.contains(in)) need(in.node);
    }
    for (int c : n.control_inputs()) need(c);
  }
  return needed;
}

std::string DescribeInput(const Graph& graph, int node_id) {
  const Node& n = graph.node(node_id);
  return absl::StrCat("'", n.name(), "' (", DataTypeName(n.output_dtype(0)),
                      n.output_shape(0).DebugString(), ")");
}

}  // namespace

absl::StatusOr<std::unique_ptr<const ExecutionPlan>> CompilePlan(
    const Graph& graph, const std::vector<TensorRef>& feeds,
    const std::vector<TensorRef>& fetches, const DeviceAssignment& devices,
    bool allow_parallel) {
  auto plan = std::make_unique<ExecutionPlan>();
  absl::flat_hash_set<TensorRef> fed(feeds.begin(), feeds.end());
  std::vector<bool> needed = NeededNodes(graph, fed, fetches);

  // Needed Input nodes must be fed.
  std::vector<std::string> missing;
  for (int id : graph.topological_order()) {
    if (needed[id] && graph.node(id).op() == "Input") {
      missing.push_back(DescribeInput(graph, id));
    }
  }
  if (!missing.empty()) {
    std::vector<std::string> all;
    for (const GraphInput& in : graph.inputs()) {
      all.push_back(DescribeInput(graph, in.node));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "missing input ", absl::StrJoin(missing, ", "),
        "; the model's inputs are: ", absl::StrJoin(all, ", ")));
  }

  // Slots: feeds first, then each needed node's outputs.
  absl::flat_hash_map<TensorRef, int> slot_of;
  int next_slot = 0;
  for (const TensorRef& f : feeds) {
    plan->feed_slots.push_back(next_slot);
    slot_of[f] = next_slot++;
  }
  std::vector<int> plan_index(graph.num_nodes(), -1);
  for (int id : graph.topological_order()) {
    if (!needed[id]) continue;
    const Node& n = graph.node(id);
    int base = next_slot;
    next_slot += n.num_outputs();
    for (int p = 0; p < n.num_outputs(); ++p) {
      TensorRef ref{id, p};
      if (!fed.contains(ref)) slot_of[ref] = base + p;
    }
    if (n.const_value() != nullptr) {
      // A constant is not run: its value is put in its slot each step.
      plan->constant_slots.emplace_back(base, *n.const_value());
      continue;
    }
    PlanNode pn;
    pn.node = &n;
    pn.device = devices[id];
    pn.output_slot = base;
    pn.num_outputs = n.num_outputs();
    plan_index[id] = static_cast<int>(plan->nodes.size());
    plan->nodes.push_back(std::move(pn));
  }
  plan->num_slots = next_slot;
  plan->slot_reads.assign(next_slot, 0);

  // Inputs, read counts, and dependencies.
  for (PlanNode& pn : plan->nodes) {
    const Node& n = *pn.node;
    absl::flat_hash_set<int> preds;
    for (const TensorRef& in : n.inputs()) {
      int slot = slot_of.at(in);
      pn.input_slots.push_back(slot);
      ++plan->slot_reads[slot];
      if (!fed.contains(in) && plan_index[in.node] >= 0) {
        preds.insert(plan_index[in.node]);
      }
    }
    for (int c : n.control_inputs()) {
      if (plan_index[c] >= 0) preds.insert(plan_index[c]);
    }
    pn.num_predecessors = static_cast<int>(preds.size());
    int self = static_cast<int>(&pn - plan->nodes.data());
    std::vector<int> sorted(preds.begin(), preds.end());
    std::sort(sorted.begin(), sorted.end());
    for (int p : sorted) plan->nodes[p].successors.push_back(self);
    if (preds.empty()) plan->roots.push_back(self);
  }
  for (const TensorRef& f : fetches) {
    int slot = slot_of.at(f);
    plan->fetch_slots.push_back(slot);
    ++plan->slot_reads[slot];
  }

  // A chain (every node with at most one successor and one root) gains
  // nothing from the thread pool.
  bool chain = plan->roots.size() <= 1;
  for (const PlanNode& pn : plan->nodes) {
    if (pn.successors.size() > 1) chain = false;
  }
  plan->sequential = chain || !allow_parallel;

  // Kernels last: all structural errors are reported before any is made.
  const KernelRegistry* registry = KernelRegistry::Global();
  for (PlanNode& pn : plan->nodes) {
    absl::StatusOr<std::unique_ptr<OpKernel>> kernel =
        registry->Create(*pn.node, pn.device->type());
    if (!kernel.ok()) {
      return absl::Status(
          kernel.status().code(),
          absl::StrCat(pn.node->DebugName(), " on ", pn.device->name(), ": ",
                       kernel.status().message()));
    }
    pn.kernel = *std::move(kernel);
  }
  return std::unique_ptr<const ExecutionPlan>(std::move(plan));
}

}  // namespace sluice
