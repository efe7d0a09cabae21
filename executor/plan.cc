#include "executor/plan.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "executor/copy_kernel.h"
#include "executor/subgraph.h"
#include "kernels/kernel_registry.h"
#include "kernels/subgraph_kernel.h"

namespace sluice {
namespace {

std::string DescribeInput(const Graph& graph, int node_id) {
  const Node& n = graph.node(node_id);
  return absl::StrCat("'", n.name(), "' (", DataTypeName(n.output_dtype(0)),
                      n.output_shape(0).DebugString(), ")");
}

absl::Status WithDevice(const Node& node, const Device& device,
                        const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(node.DebugName(), " on ",
                                             device.name(), ": ", s.message()));
}

// Builds the plan's nodes and slots; one instance per CompilePlan call.
class PlanBuilder {
 public:
  PlanBuilder(const Graph& graph, std::shared_ptr<const Partitioning> parts,
              const PlanOptions& options)
      : graph_(graph), parts_(*parts), options_(options),
        plan_(new ExecutionPlan) {
    plan_->partitioning = std::move(parts);
  }

  absl::StatusOr<std::unique_ptr<const ExecutionPlan>> Build(
      const std::vector<TensorRef>& feeds,
      const std::vector<TensorRef>& fetches) {
    absl::flat_hash_set<TensorRef> fed(feeds.begin(), feeds.end());
    const std::vector<bool>& needed = parts_.computed;
    if (needed.size() != static_cast<size_t>(graph_.num_nodes())) {
      return absl::InternalError("the partitioning is for another graph");
    }
    RETURN_IF_ERROR(CheckFedInputs(graph_, parts_));
    for (int t = 0; t < static_cast<int>(parts_.transfers.size()); ++t) {
      const Transfer& x = parts_.transfers[t];
      for (const Consumer& c : x.consumers) {
        transfer_of_input_[{c.node, c.input}] = t;
      }
      if (x.fetched) transfer_of_fetch_[{x.producer, x.dst_device}] = t;
      if (cross_ != nullptr &&
          Local(x.src_device) != Local(x.dst_device)) {
        // One end here, the other on another rank: at the point of the
        // run order where its value is made (fed values first).
        if (x.fed) {
          cross_fed_.push_back(t);
        } else {
          cross_after_[x.producer.node].push_back(t);
        }
      }
    }

    Device* io = options_.io != nullptr ? options_.io : options_.host;
    if (parts_.feed_devices.size() != feeds.size() ||
        parts_.fetch_devices.size() != fetches.size()) {
      return absl::InternalError(
          "the partitioning is for another set of feeds and fetches");
    }
    for (size_t i = 0; i < feeds.size(); ++i) {
      if (!Local(parts_.feed_devices[i])) continue;  // another rank's feed
      ASSIGN_OR_RETURN(Device * at, EndpointDevice(parts_.feed_devices[i], io));
      plan_->feed_slots.push_back(NewSlot(at, -1));
      slot_of_[feeds[i]] = plan_->feed_slots.back();
    }
    plan_index_.assign(graph_.num_nodes(), -1);
    absl::Span<const int> order = graph_.topological_order();
    if (options_.order != nullptr &&
        options_.order->size() == static_cast<size_t>(graph_.num_nodes())) {
      order = *options_.order;
    }
    for (int t : cross_fed_) RETURN_IF_ERROR(AddCrossProcess(t));
    for (int id : order) {
      const bool here =
          cross_ == nullptr || (*options_.devices)[id] != nullptr;
      if (needed[id] && here) RETURN_IF_ERROR(AddNode(graph_.node(id), fed));
      auto after = cross_after_.find(id);
      if (after == cross_after_.end()) continue;
      for (int t : after->second) RETURN_IF_ERROR(AddCrossProcess(t));
    }
    for (size_t i = 0; i < fetches.size(); ++i) {
      if (!Local(parts_.fetch_devices[i])) continue;  // another rank's fetch
      // The caller gets each fetch on its device (the host, or `io`, unless
      // the step asked for another): values elsewhere come through the
      // partitioning's copy; values on a logical CPU are host memory
      // already.
      const TensorRef& f = fetches[i];
      ASSIGN_OR_RETURN(Device * want,
                       EndpointDevice(parts_.fetch_devices[i], io));
      auto t = transfer_of_fetch_.find({f, parts_.fetch_devices[i]});
      ASSIGN_OR_RETURN(
          int slot,
          ValueSlot(f, t != transfer_of_fetch_.end() ? t->second : -1));
      const bool both_host_memory =
          slot_device_[slot]->type() == DeviceType::kCpu &&
          want->type() == DeviceType::kCpu;
      if (slot_device_[slot] != want && !both_host_memory) {
        return absl::InternalError(absl::StrCat(
            "the partitioning returns fetch ", graph_.node(f.node).name(), ":",
            f.port, " from ", slot_device_[slot]->name(), " without a copy"));
      }
      plan_->fetch_slots.push_back(slot);
      ++reads_[slot];
    }
    Finish();
    return std::unique_ptr<const ExecutionPlan>(std::move(plan_));
  }

 private:
  // Whether topology device `d` is this process's (always, in a plan of
  // one process).
  bool Local(int d) const {
    if (cross_ == nullptr) return true;
    const std::vector<int>& ranks = *cross_->rank_of_device;
    return d >= 0 && d < static_cast<int>(ranks.size()) &&
           ranks[d] == cross_->rank;
  }

  // The slot that holds `value` where transfer `t` (-1: none) delivers it,
  // or where it lives: a receive's output when `t` comes from another
  // rank, else the value's own slot, through the copy of `t`.
  absl::StatusOr<int> ValueSlot(const TensorRef& value, int t) {
    if (t >= 0 && !Local(parts_.transfers[t].src_device)) {
      auto received = received_slot_.find(t);
      if (received == received_slot_.end()) {
        return absl::InternalError(absl::StrCat(
            "transfer of ", graph_.node(value.node).name(), ":", value.port,
            " from another rank has no receive before its reader"));
      }
      return received->second;
    }
    auto it = slot_of_.find(value);
    if (it == slot_of_.end()) {
      return absl::InternalError(absl::StrCat(
          "no value for ", graph_.node(value.node).name(), ":", value.port,
          " on this rank and no transfer that brings it"));
    }
    if (t < 0) return it->second;
    return CopiedSlot(t, it->second);
  }

  // The send or receive of transfer `t`, which has one end on this rank.
  absl::Status AddCrossProcess(int t) {
    const Transfer& x = parts_.transfers[t];
    const bool send = Local(x.src_device);
    const int here = send ? x.src_device : x.dst_device;
    Device* local = (*options_.topology_devices)[here];
    if (local == nullptr) {
      return absl::InternalError(absl::StrCat(
          "topology device ", here, " of this rank was not set up"));
    }
    const Node& producer = graph_.node(x.producer.node);
    ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> kernel,
                     cross_->make_kernel(t, x, producer, local, send));
    PlanNode pn;
    pn.node = &producer;
    pn.device = local;
    pn.kernel = std::move(kernel);
    pn.is_copy = true;
    const int self = static_cast<int>(plan_->nodes.size());
    if (send) {
      auto it = slot_of_.find(x.producer);
      if (it == slot_of_.end() || slot_device_[it->second] != local) {
        return absl::InternalError(absl::StrCat(
            "the send of ", producer.name(), ":", x.producer.port,
            " finds no value on ", local->name()));
      }
      pn.input_slots.push_back(it->second);
      ++reads_[it->second];
      pn.output_slot = static_cast<int>(slot_device_.size());
      pn.num_outputs = 0;
    } else {
      pn.num_outputs = 1;
      pn.output_slot = NewSlot(local, self);
      received_slot_[t] = pn.output_slot;
    }
    plan_->nodes.push_back(std::move(pn));
    ++plan_->num_cross_process;
    return absl::OkStatus();
  }

  // The device behind topology index `d`; `fallback` for -1.
  absl::StatusOr<Device*> EndpointDevice(int d, Device* fallback) const {
    if (d < 0) return fallback;
    const std::vector<Device*>& devs = *options_.topology_devices;
    if (d >= static_cast<int>(devs.size()) || devs[d] == nullptr) {
      return absl::InternalError(absl::StrCat(
          "a feed or fetch is on topology device ", d,
          ", which the session did not set up"));
    }
    return devs[d];
  }

  int NewSlot(Device* device, int producer) {
    slot_device_.push_back(device);
    slot_producer_.push_back(producer);
    reads_.push_back(0);
    return static_cast<int>(slot_device_.size()) - 1;
  }

  absl::Status AddNode(const Node& n,
                       const absl::flat_hash_set<TensorRef>& fed) {
    Device* device = (*options_.devices)[n.id()];
    if (n.is_const()) {
      // A constant is not run: its value is put in its slot each step.
      if (n.const_value() == nullptr) {
        return absl::FailedPreconditionError(absl::StrCat(
            n.DebugName(), " has no value: the graph was built to be "
            "described (ConstValues::kDescribeSplats), not run"));
      }
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
    // Control flow: the kernel's subgraphs compile now, on its device.
    if (auto* sk = dynamic_cast<SubgraphKernel*>(kernel->get())) {
      absl::Status s =
          sk->CompileSubgraphs([device, host = options_.host](const Graph& g) {
            return CompileSubgraph(g, device, host);
          });
      if (!s.ok()) return WithDevice(n, *device, s);
    }

    PlanNode pn;
    pn.node = &n;
    pn.device = device;
    pn.kernel = *std::move(kernel);
    pn.num_outputs = n.num_outputs();
    const std::vector<int>& host_inputs = (*def)->host_memory_inputs;
    for (int i = 0; i < n.num_inputs(); ++i) {
      bool on_host = std::find(host_inputs.begin(), host_inputs.end(), i) !=
                     host_inputs.end();
      auto t = transfer_of_input_.find({n.id(), i});
      ASSIGN_OR_RETURN(
          int slot,
          ValueSlot(n.input(i),
                    t != transfer_of_input_.end() ? t->second : -1));
      // Nothing crosses devices but the partitioning's transfers.
      Device* want = on_host ? options_.host : device;
      Device* have = slot_device_[slot];
      bool both_host_memory = on_host && have->type() == DeviceType::kCpu;
      if (have != want && !both_host_memory) {
        return absl::InternalError(absl::StrCat(
            n.DebugName(), " reads input ", i, " on ", want->name(),
            " but the partitioning leaves it on ", have->name()));
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

  // The slot holding transfer `t`'s value (now in `slot`) on its
  // destination, adding the copy the first time.
  absl::StatusOr<int> CopiedSlot(int t, int slot) {
    auto it = copies_.find(t);
    if (it != copies_.end()) return it->second;
    const Transfer& x = parts_.transfers[t];
    const std::vector<Device*>& devs = *options_.topology_devices;
    Device* src = slot_device_[slot];
    Device* dst = x.dst_device < static_cast<int>(devs.size())
                      ? devs[x.dst_device] : nullptr;
    if (dst == nullptr || x.src_device >= static_cast<int>(devs.size()) ||
        devs[x.src_device] != src) {
      return absl::InternalError(absl::StrCat(
          "transfer of ", graph_.node(x.producer.node).name(), ":",
          x.producer.port, " does not match the devices the plan has"));
    }
    const Node& producer = graph_.node(x.producer.node);
    // A constant the destination holds itself (Transfer::constant,
    // placer/constants_where_read.h) is a constant slot there, not a copy
    // every step: a GPU kernel that reads it in host memory (Resize's
    // sizes) takes the host value, and a plan replayed as a CUDA graph has
    // no copy inside it to refuse (executor/gpu_graph_runner.h).
    if (x.constant && producer.const_value() != nullptr) {
      Tensor value = *producer.const_value();
      if (options_.constant_on && dst != options_.host) {
        absl::StatusOr<Tensor> on_dst = options_.constant_on(producer, dst);
        if (!on_dst.ok()) return WithDevice(producer, *dst, on_dst.status());
        value = *std::move(on_dst);
      }
      const int constant = NewSlot(dst, -1);
      plan_->constant_slots.emplace_back(constant, std::move(value));
      copies_[t] = constant;
      return constant;
    }
    PlanNode pn;
    pn.node = &producer;
    pn.device = dst;
    // A fetched value copied to the host lands where the step wants its
    // host fetches (page-locked memory, or the CPU's own).
    Allocator* out_allocator =
        x.fetched && dst->type() == DeviceType::kCpu
            ? options_.host_fetch_allocator
            : nullptr;
    pn.kernel = std::make_unique<CopyKernel>(producer, src, dst, out_allocator);
    pn.is_copy = true;
    pn.num_outputs = 1;
    pn.input_slots.push_back(slot);
    ++reads_[slot];
    int self = static_cast<int>(plan_->nodes.size());
    pn.output_slot = NewSlot(dst, self);
    plan_->nodes.push_back(std::move(pn));
    ++plan_->num_copies;
    copies_[t] = plan_->nodes.back().output_slot;
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
    // A rank of a job runs its nodes, sends and receives in the order
    // they were added (CrossProcessPlan).
    plan_->sequential = chain || !options_.allow_parallel ||
                        plan_->num_cross_process > 0;
  }

  const Graph& graph_;
  const Partitioning& parts_;  // owned by plan_
  const PlanOptions& options_;
  const CrossProcessPlan* const cross_ = options_.cross_process;
  std::unique_ptr<ExecutionPlan> plan_;
  // Transfers crossing processes with an end here: fed ones, and the
  // others by their producer's node id; and each receive's output slot.
  std::vector<int> cross_fed_;
  absl::flat_hash_map<int, std::vector<int>> cross_after_;
  absl::flat_hash_map<int, int> received_slot_;
  absl::flat_hash_map<TensorRef, int> slot_of_;
  std::vector<Device*> slot_device_;
  std::vector<int> slot_producer_;  // plan index, or -1 (feed, constant)
  std::vector<int> reads_;
  std::vector<int> plan_index_;     // node id -> plan index, or -1
  absl::flat_hash_map<int, int> copies_;  // transfer -> slot on its dst
  absl::flat_hash_map<std::pair<int, int>, int> transfer_of_input_;
  // (fetched value, destination topology index) -> transfer.
  absl::flat_hash_map<std::pair<TensorRef, int>, int> transfer_of_fetch_;
};

}  // namespace

std::vector<int> KernelHostMemoryInputs(const Node& node, DeviceType type) {
  absl::StatusOr<const KernelDef*> def = KernelRegistry::Global()->Find(node, type);
  if (!def.ok()) return {};
  return (*def)->host_memory_inputs;
}

absl::Status CheckFedInputs(const Graph& graph, const Partitioning& parts) {
  std::vector<std::string> missing;
  for (int id : graph.topological_order()) {
    if (parts.computed[id] && graph.node(id).op() == "Input") {
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

absl::StatusOr<std::unique_ptr<const ExecutionPlan>> CompilePlan(
    const Graph& graph, const std::vector<TensorRef>& feeds,
    const std::vector<TensorRef>& fetches,
    std::shared_ptr<const Partitioning> partitioning,
    const PlanOptions& options) {
  if (partitioning == nullptr || options.topology_devices == nullptr) {
    return absl::InternalError("CompilePlan needs a partitioning and its devices");
  }
  PlanBuilder builder(graph, std::move(partitioning), options);
  return builder.Build(feeds, fetches);
}

}  // namespace sluice
