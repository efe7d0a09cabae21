// Hard placement constraints: for every node, the set of devices it may go
// to, from kernel capability (a query answering "can a kernel on this device
// type run this node, with its shapes and attributes?"), its requested
// device and its colocation group, with soft placement relaxing requests
// that cannot be met. The placer (placer.h) then chooses within these sets.
//
//   ASSIGN_OR_RETURN(NodeConstraints c,
//                    ComputeConstraints(graph, topo, KernelCapabilityQuery(),
//                                       /*soft_placement=*/true));
//   if (c.mask[id] & (DeviceMask{1} << d)) { ... d is allowed ... }
//
// Stateless function; thread-safe when the predicate is.
#ifndef SLUICE_PLACER_CONSTRAINTS_H_
#define SLUICE_PLACER_CONSTRAINTS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "placer/device_spec.h"

namespace sluice {

// Bit d set: device d (an index into DeviceTopology::devices) is allowed.
using DeviceMask = uint64_t;
inline DeviceMask DeviceBit(int d) { return DeviceMask{1} << d; }

// Whether a kernel on devices of `type` can run `node`: OK; NOT_FOUND when
// there is no kernel for its op and dtypes; any other code when there is
// one but it cannot run this node (its shapes, its attributes), with the
// reason in the message. The placer links no kernels: callers pass
// KernelCapabilityQuery() (kernels/kernel_registry.h, the registry's
// Supports) or, in tests, a fake.
using KernelQuery =
    std::function<absl::Status(const Node& node, DeviceType type)>;

// The node attribute naming a colocation group: every node with the same
// string value is placed on one device. Ops do not declare it; the graph
// builder keeps attributes whose names start with '_'.
inline constexpr char kColocateAttr[] = "_colocate";

enum class RequestKind : uint8_t {
  kNone,     // no device requested
  kFull,     // "/gpu:1"
  kPartial,  // "/gpu:*"
  kRelaxed,  // requested, but soft placement dropped the request
};

struct NodeConstraints {
  std::vector<DeviceMask> kernel_mask;  // devices whose kernel can run it
  std::vector<DeviceMask> mask;         // allowed devices (never empty)
  std::vector<RequestKind> request;
  std::vector<int> group;               // colocation group, -1 for none
  std::vector<std::string> group_names;
  std::vector<DeviceMask> group_mask;   // intersection over the members
  // By node id: why devices with a kernel for the op cannot run the node
  // ("/gpu:0: the gpu kernel for Softmax cannot run it: rank 9 > 8"), and
  // why a request was relaxed (soft placement), joined by "; ".
  absl::flat_hash_map<int, std::string> notes;
};

// Errors (INVALID_ARGUMENT): no query; a node no device's kernel can run
// (the message names the node and each refusal's reason); a request
// that names no usable device while soft placement is off (the message names
// the node and the devices that were possible); an unparseable request; a
// colocation group whose members have no device in common.
// `extra_groups` maps node names to colocation groups, merged with the
// kColocateAttr attributes (a node's attribute wins).
absl::StatusOr<NodeConstraints> ComputeConstraints(
    const Graph& graph, const DeviceTopology& topo,
    const KernelQuery& has_kernel, bool soft_placement,
    const absl::flat_hash_map<std::string, std::string>& extra_groups = {});

// "/cpu:0, /gpu:1" for the devices in `mask`; "none" when empty.
std::string MaskToString(const DeviceTopology& topo, DeviceMask mask);

}  // namespace sluice

#endif  // SLUICE_PLACER_CONSTRAINTS_H_
