#include "executor/plan.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "executor/copy_kernel.h"
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

absl::Status MissingInputs(const Graph& graph,
                           const std::vector<bool>& needed) {
  std::vector<std::string> missing;
  for (int id : graph.topological_order()) {
    if (needed[id] && graph.node(id).op() == "Input") {
      missing.push_back(DescribeInput(graph, id));
    }
  }
  if (missing.empty()) return absl::OkStatus();
  std::vector<std::string> all;
  for (const GraphInput& in : graph.inputs()) {
    all.push_back(DescribeInput(graph, in.node));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "missing input ", absl::StrJoin(missing, ", "),
      "; the model's inputs are: ", absl::StrJoin(all, ", ")));
}

absl::Status WithDevice(const Node& node, const Device& device,
                        const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(node.DebugName(), " on ",
                                             device.name(), ": ", s.message()));
}

// Builds the plan's nodes and slots; one instance per CompilePlan call.
class PlanBuilder {
 public:
  PlanBuilder(const Graph& graph, const PlanOptions& options)
      : graph_(graph), options_(options), plan_(new ExecutionPlan) {}

  absl::StatusOr<std::unique_ptr<const ExecutionPlan>> Build(
      const std::vector<TensorRef>& feeds,
      const std::vector<TensorRef>& fetches) {
    absl::flat_hash_set<TensorRef> fed(feeds.begin(), feeds.end());
    std::vector<bool> needed = NeededNodes(graph_, fed, fetches);
    RETURN_IF_ERROR(MissingInputs(graph_, needed));

    for (const TensorRef& f : feeds) {
      plan_->feed_slots.push_back(NewSlot(options_.host, -1));
      slot_of_[f] = plan_->feed_slots.back();
    }
    plan_index_.assign(graph_.num_nodes(), -1);
    absl::Span<const int> order = graph_.topological_order();
    if (options_.order != nullptr &&
        options_.order->size() == static_cast<size_t>(graph_.num_nodes())) {
      order = *options_.order;
    }
    for (int id : order) {
      if (needed[id]) RETURN_IF_ERROR(AddNode(graph_.node(id), fed));
    }
    for (const TensorRef& f : fetches) {
      // The caller gets host tensors: values on a GPU come back through a
      // copy; values on a logical CPU are host memory already.
      int slot = slot_of_.at(f);
      if (slot_device_[slot]->type() == DeviceType::kGpu) {
        slot = CopiedSlot(slot, options_.host, graph_.node(f.node));
      }
      plan_->fetch_slots.push_back(slot);
      ++reads_[slot];
    }
    Finish();
    return std::unique_ptr<const ExecutionPlan>(std::move(plan_));
  }

 private:
  int NewSlot(Device* device, int producer) {
    slot_device_.push_back(device);
    slot_producer_.push_back(producer);
    reads_.push_back(0);
    return static_cast<int>(slot_device_.size()) - 1;
  }

  absl::Status AddNode(const Node& n,
                       const absl::flat_hash_set<TensorRef>& fed) {
    Device* device = (*options_.devices)[n.id()];
    if (n.const_value() != nullptr) {
      // A constant is not run: its value is put in its slot each step.
      int slot = NewSlot(device, -1);
      slot_of_[TensorRef{n.id(), 0}] = slot;
      Tensor value = *n.const_value();
      if (options_.constant_on && device != options_.host) {
        absl::StatusOr<Tensor> on_device = options_.constant_on(n, device);
        if (!on_device.ok()) return WithDevice(n, *device, on_device.status());
        value = *std::move(on_device);
      }
      plan_->constant_slots.emplace_back(slot, std::move(value));
      return absl::OkStatus();
    }
    const KernelRegistry* registry = KernelRegistry::Global();
    absl::StatusOr<const KernelDef*> def = registry->Find(n, device->type());
    if (!def.ok()) return WithDevice(n, *device, def.status());
    absl::StatusOr<std::unique_ptr<OpKernel>> kernel = (*def)->factory(n);
    if (!kernel.ok()) return WithDevice(n, *device, kernel.status());

    PlanNode pn;
    pn.node = &n;
    pn.device = device;
    pn.kernel = *std::move(kernel);
    pn.num_outputs = n.num_outputs();
    const std::vector<int>& host_inputs = (*def)->host_memory_inputs;
    for (int i = 0; i < n.num_inputs(); ++i) {
      int slot = slot_of_.at(n.input(i));
      bool on_host = std::find(host_inputs.begin(), host_inputs.end(), i) !=
                     host_inputs.end();
      Device* want = on_host ? options_.host : device;
      Device* have = slot_device_[slot];
      bool both_host_memory = on_host && have->type() == DeviceType::kCpu;
      if (have != want && !both_host_memory) {
        slot = CopiedSlot(slot, want, graph_.node(n.input(i).node));
      }
      pn.input_slots.push_back(slot);
      ++reads_[slot];
    }
    int self = static_cast<int>(plan_->nodes.size());
    pn.output_slot = static_cast<int>(slot_device_.size());
    for (int p = 0; p < n.num_outputs(); ++p) {
      int slot = NewSlot(device, self);
      TensorRef ref{n.id(), p};
      if (!fed.contains(ref)) slot_of_[ref] = slot;
    }
    plan_index_[n.id()] = self;
    plan_->nodes.push_back(std::move(pn));
    return absl::OkStatus();
  }

  // The slot holding `slot`'s value on `dst`, adding a copy the first time.
  int CopiedSlot(int slot, Device* dst, const Node& producer) {
    auto key = std::make_pair(slot, dst);
    auto it = copies_.find(key);
    if (it != copies_.end()) return it->second;
    Device* src = slot_device_[slot];
    PlanNode pn;
    pn.node = &producer;
    pn.device = dst;
    pn.kernel = std::make_unique<CopyKernel>(producer, src, dst);
    pn.is_copy = true;
    pn.num_outputs = 1;
    pn.input_slots.push_back(slot);
    ++reads_[slot];
    int self = static_cast<int>(plan_->nodes.size());
    pn.output_slot = NewSlot(dst, self);
    plan_->nodes.push_back(std::move(pn));
    ++plan_->num_copies;
    copies_[key] = plan_->nodes.back().output_slot;
    return plan_->nodes.back().output_slot;
  }

  // Dependencies, roots, and whether the plan is a chain.
  void Finish() {
    plan_->num_slots = static_cast<int>(slot_device_.size());
    plan_->slot_reads = reads_;
    const int n = static_cast<int>(plan_->nodes.size());
    for (int self = 0; self < n; ++self) {
      PlanNode& pn = plan_->nodes[self];
      std::vector<int> preds;
      for (int slot : pn.input_slots) {
        if (slot_producer_[slot] >= 0) preds.push_back(slot_producer_[slot]);
      }
      if (!pn.is_copy) {
        for (int c : pn.node->control_inputs()) {
          if (plan_index_[c] >= 0) preds.push_back(plan_index_[c]);
        }
      }
      std::sort(preds.begin(), preds.end());
      preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
      pn.num_predecessors = static_cast<int>(preds.size());
      for (int p : preds) plan_->nodes[p].successors.push_back(self);
      if (preds.empty()) plan_->roots.push_back(self);
    }
    // A chain (one root, no node with two successors) gains nothing from
    // the thread pool.
    bool chain = plan_->roots.size() <= 1;
    for (const PlanNode& pn : plan_->nodes) {
      if (pn.successors.size() > 1) chain = false;
    }
    plan_->sequential = chain || !options_.allow_parallel;
  }

  const Graph& graph_;
  const PlanOptions& options_;
  std::unique_ptr<ExecutionPlan> plan_;
  absl::flat_hash_map<TensorRef, int> slot_of_;
  std::vector<Device*> slot_device_;
  std::vector<int> slot_producer_;  // plan index, or -1 (feed, constant)
  std::vector<int> reads_;
  std::vector<int> plan_index_;     // node id -> plan index, or -1
  absl::flat_hash_map<std::pair<int, Device*>, int> copies_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<const ExecutionPlan>> CompilePlan(
    const Graph& graph, const std::vector<TensorRef>& feeds,
    const std::vector<TensorRef>& fetches, const PlanOptions& options) {
  PlanBuilder builder(graph, options);
  return builder.Build(feeds, fetches);
}

}  // namespace sluice
