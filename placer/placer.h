// Placer: chooses a device for every node of a graph, within each device's
// memory budget, and says why for each node. The result is a Placement, a
// value separate from the (immutable) graph; partition.h splits the graph by
// it.
//
//   ASSIGN_OR_RETURN(DeviceTopology topo, ParseDeviceSpecs("2xgpu:16GiB,cpu"));
//   PlacerOptions options;
//   options.has_kernel = KernelCapabilityQuery();  // kernels/kernel_registry.h
//   ASSIGN_OR_RETURN(Placement p, PlaceGraph(graph, topo, options));
//   std::cout << graph.node(0).name() << " -> "
//             << topo.devices[p.device_of_node[0]].name << ": "
//             << p.reason[0] << "\n";
//
// PlaceGraph is a pure function of its arguments; thread-safe when the
// kernel query is.
//
// The contract, in order of precedence:
//
//  1. Kernels. A node goes only to a device whose kernel can run it:
//     PlacerOptions::has_kernel (required; KernelCapabilityQuery() from
//     kernels/kernel_registry.h asks each kernel's capability check, which
//     looks at the op, its type attributes, its other attributes and the
//     node's inferred shapes). So a node that a GPU kernel cannot run for
//     its shapes goes to a CPU, and its reason says why ("/gpu:0: the gpu
//     kernel for Softmax cannot run it: rank 9 > 8; only /cpu:0 has a
//     kernel"), instead of failing in the middle of a step. A node no
//     device can run is an INVALID_ARGUMENT error naming it and each
//     kernel's refusal. GPUs first (PlacerOptions::gpu_first, which
//     sessions set): with a GPU in the topology, a node that a GPU can run
//     may go to a CPU only when it requests a CPU ("/cpu:0",
//     "/device:CPU:0"), unless MANUAL or SINGLE has a CPU as its default
//     device: that default is a request for the CPU by every node without
//     one.
//  2. Requests. A node's requested device, full ("/gpu:1") or partial
//     ("/gpu:*": any GPU), restricts it to the matching devices.
//  3. Colocation. Nodes whose string attribute `_colocate` (kColocateAttr)
//     has the same value go to one device, allowed for all of them.
//  4. Soft placement (on by default). A request that names no device, or a
//     device without a kernel, or that conflicts inside a colocation group,
//     or whose devices are all full, is dropped and the node's reason says
//     why. With soft placement off each of these is an error naming the
//     node and the devices that were possible (INVALID_ARGUMENT, or
//     RESOURCE_EXHAUSTED for a full device).
//  5. Memory. A device holds the weights (Const values) placed on it plus
//     the peak of its live activations, with its nodes run in the order
//     Placement::run_order lists them: an output is live from its producer
//     until its last consumer on that device (graph outputs until the end
//     of the step), and a copy received from another device from its
//     producer's position until its last consumer there. No device's
//     budget (DeviceSpec::memory_budget: limit minus workspace reserve) is
//     ever exceeded. When no placement fits, the error is RESOURCE_EXHAUSTED
//     with the bytes needed and every device's budget.
//  6. Strategy, among the devices rules 1-5 allow:
//     AUTO (default): when the fastest device (the largest of the
//       fastest) cannot hold the model, pipeline stages (stages.h): the
//       nodes in one topological run order, cut into contiguous stages on
//       devices fastest first (a host's GPUs before the next host's), each
//       stage filled to its budget and its end moved back to the boundary
//       the fewest values (then bytes) cross; so values flow from a stage to
//       later ones only. If no such split fits, or with
//       PlacerOptions::pipeline_stages off, and for a model that fits on one
//       device: memory-constrained earliest-finish-time list
//       scheduling. Nodes in order of upward rank (longest estimated path to
//       the end, mean costs); each goes to the device where it would finish
//       first (device free time, inputs' arrival over the links, its own
//       time there) among those with room. Const and Input nodes without a
//       group follow their first consumer, so weights sit where they are
//       used. If the greedy pass runs out of room, a second pass fills the
//       devices in order of speed (a pipeline split) before giving up.
//       With PlacerOptions::min_spread_gain > 0, a result that uses several
//       devices is kept only if it is estimated to finish a step at least
//       that fraction sooner than SINGLE; otherwise SINGLE's is returned,
//       with a note saying why.
//     SINGLE: everything on the fastest device that holds the whole model
//       (rules 1-4 still apply per node), the CPU otherwise.
//     MANUAL: requests only; every other node on the default device
//       (PlacerOptions::default_device, else the first GPU, else the CPU),
//       or, lacking a kernel or room there, the next device that has one.
//  7. Every node gets a reason a person can read, for example "requested",
//     "only /cpu:0 has a kernel", "/gpu:0 budget full: 3.9 of 4.0 GiB",
//     "earliest finish: 1.20 ms on /gpu:1 vs 1.90 ms on /gpu:0".
#ifndef SLUICE_PLACER_PLACER_H_
#define SLUICE_PLACER_PLACER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "placer/constraints.h"
#include "placer/cost_model.h"
#include "placer/device_spec.h"
#include "proto/config.pb.h"
#include "sluice/placement.h"  // IWYU pragma: export

namespace sluice {

struct PlacerOptions {
  PlacementStrategy strategy = PLACEMENT_AUTO;  // DEFAULT means AUTO
  bool soft_placement = true;
  // MANUAL and SINGLE: where unrequested nodes go ("/gpu:0"); "" = the
  // first GPU, else the first CPU.
  std::string default_device;
  CostModelOptions cost;
  // Colocation groups by node name, in addition to `_colocate` attributes
  // (for callers that group nodes themselves; the attribute wins).
  absl::flat_hash_map<std::string, std::string> colocation_groups;
  // Which device types can run each node (rule 1). Required: PlaceGraph
  // returns INVALID_ARGUMENT when it is empty. KernelCapabilityQuery()
  // (kernels/kernel_registry.h) for real kernels; tests pass fakes.
  KernelQuery has_kernel;
  // Rule 1's GPUs first: keep nodes that a GPU can run off the CPUs, so a
  // model whose every node has a GPU kernel stays on the GPUs, as
  // TensorFlow users expect. No effect without a GPU in the topology.
  bool gpu_first = false;
  // AUTO: keep a model that fits on one device there unless spreading it
  // is estimated to save at least this fraction of the step (rule 6). The
  // cost model does not see the host's cost per cross-device copy, so small
  // estimated gains are not worth it. 0: AUTO's result as it is.
  double min_spread_gain = 0;
  // AUTO: a model that the fastest device cannot hold is cut into
  // contiguous pipeline stages (rule 6). Off: the earliest-finish placement
  // (HEFT-style) for every model, as before stages existed.
  bool pipeline_stages = true;
  // Fill Placement::reason (a string per node). Off saves time on huge
  // graphs; placement is the same.
  bool record_reasons = true;
};

// What sessions use, so that `sluice place` shows what `sluice run` does.
inline constexpr double kRuntimeMinSpreadGain = 0.2;

// Options from a session's config: strategy, soft_placement (default true)
// and default_device, with what every session adds: gpu_first, and
// min_spread_gain kRuntimeMinSpreadGain. has_kernel is left for the caller
// to set.
PlacerOptions PlacerOptionsFromConfig(const RuntimeConfig& config);

// Whether `options` keep every node of `graph` off the GPUs wherever a CPU
// has a kernel and room for it: MANUAL placement with a CPU default device
// and no node requesting a GPU. A caller whose CPUs alone take the graph
// (PlaceGraph on a topology without GPUs succeeds) then needs no GPU; the
// session sets none up for `sluice run --device cpu:0`.
bool StaysOnCpus(const Graph& graph, const PlacerOptions& options);

// The devices each node of `graph` may go to under rules 1-4, as PlaceGraph
// computes them (GPUs first where it applies); for other placers of the
// same graph (placer/baechi.h). Errors as PlaceGraph's for these rules, and
// INVALID_ARGUMENT for a topology without links.
absl::StatusOr<NodeConstraints> PlacementConstraints(
    const Graph& graph, const DeviceTopology& topo,
    const PlacerOptions& options);

// Placement and DeviceUsage are public: sluice/placement.h.

// Places `graph` on `topo`'s devices (1 to 64). Errors: see the contract.
absl::StatusOr<Placement> PlaceGraph(const Graph& graph,
                                     const DeviceTopology& topo,
                                     const PlacerOptions& options);

// "auto", "single", "manual".
std::string StrategyName(PlacementStrategy strategy);
absl::StatusOr<PlacementStrategy> ParseStrategy(std::string_view name);

}  // namespace sluice

#endif  // SLUICE_PLACER_PLACER_H_
