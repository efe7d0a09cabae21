#include "executor/device_assignment.h"

#include "kernels/kernel_registry.h"

namespace sluice {
namespace {

Device* Requested(const Node& node, const std::vector<Device*>& devices) {
  if (node.requested_device().empty()) return nullptr;
  absl::StatusOr<DeviceName> name = ParseDeviceName(node.requested_device());
  if (!name.ok() || name->index < 0) return nullptr;
  for (Device* d : devices) {
    if (d->type() == name->type && d->index() == name->index) return d;
  }
  return nullptr;
}

bool FollowsConsumer(const Node& node) {
  return node.const_value() != nullptr || node.op() == "Input";
}

}  // namespace

DeviceAssignment AssignDevices(const Graph& graph,
                               const std::vector<Device*>& devices,
                               Device* preferred, Device* host) {
  const KernelRegistry* registry = KernelRegistry::Global();
  DeviceAssignment out(graph.num_nodes(), host);
  for (int id : graph.topological_order()) {
    const Node& node = graph.node(id);
    if (FollowsConsumer(node)) continue;
    Device* requested = Requested(node, devices);
    if (requested != nullptr && registry->Has(node, requested->type())) {
      out[id] = requested;
    } else if (registry->Has(node, preferred->type())) {
      out[id] = preferred;
    } else {
      out[id] = host;
    }
  }
  for (const Node& node : graph.nodes()) {
    if (!FollowsConsumer(node)) continue;
    absl::Span<const Consumer> consumers = node.num_outputs() > 0
                                               ? graph.consumers(node.id(), 0)
                                               : absl::Span<const Consumer>();
    out[node.id()] = consumers.empty() ? preferred : out[consumers[0].node];
  }
  return out;
}

}  // namespace sluice
