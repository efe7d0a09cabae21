#include "executor/subgraph.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "executor/copy_kernel.h"
#include "executor/executor.h"
#include "executor/plan.h"
#include "placer/partition.h"

namespace sluice {
namespace {

class PlannedSubgraph : public CompiledSubgraph {
 public:
  // On a GPU the topology is that GPU and the host, for the inputs kernels
  // read in host memory; every node runs on the GPU, and the subgraph's
  // inputs and outputs stay in the GPU's memory.
  PlannedSubgraph(const Graph& graph, Device* device, Device* host)
      : graph_(graph),
        assignment_(graph.num_nodes(), device),
        topology_devices_(device->type() == DeviceType::kCpu || host == nullptr
                              ? std::vector<Device*>{device}
                              : std::vector<Device*>{device, host}) {}

  absl::Status Compile() {
    for (const GraphInput& in : graph_.inputs()) {
      feeds_.push_back(TensorRef{in.node, 0});
    }
    for (const GraphOutput& out : graph_.outputs()) {
      fetches_.push_back(out.tensor);
    }
    Device* device = topology_devices_[0];
    const bool on_gpu = device->type() != DeviceType::kCpu;
    if (on_gpu && topology_devices_.size() < 2) {
      return absl::InternalError("a GPU subgraph needs the host device");
    }
    // Every node on topology device 0; on a GPU, the only transfers take
    // inputs read in host memory to the host (device 1).
    DeviceTopology topo;
    for (size_t d = 0; d < topology_devices_.size(); ++d) {
      topo.devices.push_back(MakeDeviceSpec(topology_devices_[d]->type(),
                                            topology_devices_[d]->index(), 0));
    }
    BuildLinks(&topo);
    Placement placement;
    for (Device* d : topology_devices_) {
      placement.device_names.push_back(d->name());
    }
    placement.device_of_node.assign(graph_.num_nodes(), 0);
    placement.run_order.assign(graph_.topological_order().begin(),
                               graph_.topological_order().end());
    PartitionOptions po;
    po.build_graph_defs = false;
    po.feeds = &feeds_;
    po.fetches = &fetches_;
    po.host_device = on_gpu ? 1 : 0;
    po.io_device = 0;
    po.host_memory_inputs = KernelHostMemoryInputs;
    ASSIGN_OR_RETURN(Partitioning parts,
                     PartitionGraph(graph_, topo, placement, po));
    PlanOptions options;
    options.devices = &assignment_;
    options.topology_devices = &topology_devices_;
    options.host = topology_devices_[on_gpu ? 1 : 0];
    options.io = device;
    options.allow_parallel = false;
    if (on_gpu) {
      // Constants are copied to the GPU once, here.
      Device* host = options.host;
      options.constant_on = [host](const Node& n, Device* d) {
        return CopyTensor(*n.const_value(), host, d);
      };
    }
    ASSIGN_OR_RETURN(
        plan_, CompilePlan(graph_, feeds_, fetches_,
                           std::make_shared<const Partitioning>(
                               std::move(parts)),
                           options));
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<Tensor>> Run(
      std::vector<Tensor> inputs, const StepLimits* limits) const override {
    if (inputs.size() != feeds_.size()) {
      return absl::InternalError(
          absl::StrCat("the subgraph takes ", feeds_.size(), " inputs, got ",
                       inputs.size()));
    }
    // A subgraph with no nodes (its outputs are its inputs) has no node
    // boundary to stop at: a Loop of many trips over one still stops.
    if (limits != nullptr && plan_->nodes.empty()) {
      RETURN_IF_ERROR(
          limits->CheckBefore("the outputs of a subgraph with no nodes"));
    }
    // No scheduler: the nodes run in plan order on this thread (the
    // control-flow kernel is itself running on a step's thread), each
    // checked against the step's limits first (RunPlan).
    return RunPlan(*plan_, std::move(inputs), Scheduler(), /*stats=*/nullptr,
                   limits);
  }

 private:
  const Graph& graph_;
  // Borrowed by the plan: they live as long as it.
  const DeviceAssignment assignment_;
  const std::vector<Device*> topology_devices_;
  std::vector<TensorRef> feeds_;
  std::vector<TensorRef> fetches_;
  std::unique_ptr<const ExecutionPlan> plan_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CompiledSubgraph>> CompileSubgraph(
    const Graph& graph, Device* device, Device* host) {
  auto compiled = std::make_unique<PlannedSubgraph>(graph, device, host);
  RETURN_IF_ERROR(compiled->Compile());
  return std::unique_ptr<CompiledSubgraph>(std::move(compiled));
}

}  // namespace sluice
