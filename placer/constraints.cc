// Hard constraints: kernel availability, requests, colocation, soft
// placement.
#include "placer/constraints.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/dtype.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

// Devices of each type, and the query's answer for one node on them.
class KernelMasks {
 public:
  KernelMasks(const DeviceTopology& topo, const KernelQuery& query)
      : topo_(topo), query_(query) {
    for (int d = 0; d < topo.num_devices(); ++d) {
      type_mask_[Index(topo.devices[d].type)] |= DeviceBit(d);
    }
  }

  // The devices whose kernel can run `node`. Refusals other than "no
  // kernel" (NOT_FOUND) are appended to *why, one per device type, as
  // "/gpu:0, /gpu:1: <the query's reason>".
  DeviceMask Mask(const Node& node, std::vector<std::string>* why) const {
    DeviceMask m = 0;
    for (DeviceType type : {DeviceType::kGpu, DeviceType::kCpu}) {
      const DeviceMask of_type = type_mask_[Index(type)];
      if (of_type == 0) continue;
      absl::Status s = query_(node, type);
      if (s.ok()) {
        m |= of_type;
      } else if (!absl::IsNotFound(s)) {
        why->push_back(
            absl::StrCat(MaskToString(topo_, of_type), ": ", s.message()));
      }
    }
    return m;
  }

 private:
  static int Index(DeviceType type) { return type == DeviceType::kGpu; }

  const DeviceTopology& topo_;
  const KernelQuery& query_;
  DeviceMask type_mask_[2] = {0, 0};
};

// Devices matching a parsed request.
DeviceMask RequestMask(const DeviceTopology& topo, const DeviceName& req) {
  DeviceMask m = 0;
  for (int d = 0; d < topo.num_devices(); ++d) {
    const DeviceSpec& s = topo.devices[d];
    if (s.type == req.type && (req.index < 0 || req.index == s.index)) {
      m |= DeviceBit(d);
    }
  }
  return m;
}

std::string TypeAttrs(const Node& node) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : node.attrs().values()) {
    if (value.value_case() == AttrValue::kType) {
      parts.push_back(absl::StrCat(name, "=", DataTypeName(value.type())));
    }
  }
  return parts.empty() ? "" : absl::StrCat(" (", absl::StrJoin(parts, ", "), ")");
}

// Applies node `id`'s request to c->mask[id]. `refused`: why devices with
// a kernel for the op cannot run the node ("" if none).
absl::Status ApplyRequest(const Node& node, const DeviceTopology& topo,
                          bool soft, const std::string& refused,
                          NodeConstraints* c) {
  const int id = node.id();
  const std::string& want = node.requested_device();
  if (want.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(DeviceName req, ParseDeviceName(want));
  DeviceMask requested = RequestMask(topo, req);
  DeviceMask allowed = requested & c->kernel_mask[id];
  if (allowed != 0) {
    c->mask[id] = allowed;
    c->request[id] = req.index < 0 ? RequestKind::kPartial : RequestKind::kFull;
    return absl::OkStatus();
  }
  std::string why =
      requested == 0
          ? absl::StrCat("no device ", req.ToString(), " among ",
                         MaskToString(topo, ~DeviceMask{0}))
      : refused.empty()
          ? absl::StrCat("no ", DeviceTypeName(req.type), " kernel for ",
                         node.op(), TypeAttrs(node))
          : absl::StrCat("no kernel there that can run it (", refused, ")");
  if (!soft) {
    return absl::InvalidArgumentError(absl::StrCat(
        node.DebugName(), " requests ", want, " but there is ", why,
        "; possible devices: ", MaskToString(topo, c->kernel_mask[id]),
        " (soft placement is off)"));
  }
  c->request[id] = RequestKind::kRelaxed;
  c->notes[id] = absl::StrCat("requested ", want, " but there is ", why,
                              " (soft placement)");
  return absl::OkStatus();
}

// The node's colocation group name, or "".
std::string GroupOf(
    const Node& node,
    const absl::flat_hash_map<std::string, std::string>& extra_groups) {
  const AttrValue* v = node.attrs().Find(kColocateAttr);
  if (v != nullptr && v->value_case() == AttrValue::kS && !v->s().empty()) {
    return v->s();
  }
  auto it = extra_groups.find(node.name());
  return it == extra_groups.end() ? std::string() : it->second;
}

absl::Status ApplyColocation(
    const Graph& graph, const DeviceTopology& topo, bool soft,
    const absl::flat_hash_map<std::string, std::string>& extra_groups,
    NodeConstraints* c) {
  absl::flat_hash_map<std::string, int> ids;
  for (const Node& node : graph.nodes()) {
    std::string group = GroupOf(node, extra_groups);
    if (group.empty()) continue;
    auto [it, inserted] = ids.try_emplace(group, c->group_names.size());
    if (inserted) {
      c->group_names.push_back(group);
      c->group_mask.push_back(~DeviceMask{0});
    }
    c->group[node.id()] = it->second;
    c->group_mask[it->second] &= c->mask[node.id()];
  }
  for (int g = 0; g < static_cast<int>(c->group_names.size()); ++g) {
    if (c->group_mask[g] != 0) continue;
    // Requests conflict: soft placement keeps only the kernel constraint.
    DeviceMask kernels = ~DeviceMask{0};
    std::vector<std::string> members;
    for (const Node& node : graph.nodes()) {
      if (c->group[node.id()] != g) continue;
      kernels &= c->kernel_mask[node.id()];
      members.push_back(absl::StrCat(
          "'", node.name(), "' -> ", MaskToString(topo, c->mask[node.id()])));
    }
    std::string list = absl::StrJoin(members, ", ");
    if (!soft || kernels == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "colocation group '", c->group_names[g],
          "' has no device all its members may use: ", list,
          kernels == 0 ? "" : " (soft placement is off)"));
    }
    c->group_mask[g] = kernels;
    for (const Node& node : graph.nodes()) {
      if (c->group[node.id()] != g || node.requested_device().empty()) continue;
      c->request[node.id()] = RequestKind::kRelaxed;
      c->notes[node.id()] = absl::StrCat(
          "requested ", node.requested_device(),
          " but colocation group '", c->group_names[g],
          "' could not honour every request (soft placement)");
    }
  }
  for (int id = 0; id < graph.num_nodes(); ++id) {
    if (c->group[id] >= 0) c->mask[id] = c->group_mask[c->group[id]];
  }
  return absl::OkStatus();
}

}  // namespace

std::string MaskToString(const DeviceTopology& topo, DeviceMask mask) {
  std::vector<std::string> names;
  for (int d = 0; d < topo.num_devices(); ++d) {
    if (mask & DeviceBit(d)) names.push_back(topo.devices[d].name);
  }
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

absl::StatusOr<NodeConstraints> ComputeConstraints(
    const Graph& graph, const DeviceTopology& topo,
    const KernelQuery& has_kernel, bool soft_placement,
    const absl::flat_hash_map<std::string, std::string>& extra_groups) {
  const int n = graph.num_nodes();
  if (!has_kernel) {
    return absl::InvalidArgumentError(
        "the placer needs a kernel query (PlacerOptions::has_kernel): "
        "KernelCapabilityQuery() from kernels/kernel_registry.h, or a fake");
  }
  if (topo.num_devices() < 1 || topo.num_devices() > 64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the placer needs 1 to 64 devices, got ", topo.num_devices()));
  }
  NodeConstraints c;
  c.kernel_mask.resize(n);
  c.mask.resize(n);
  c.request.assign(n, RequestKind::kNone);
  c.group.assign(n, -1);
  KernelMasks kernels(topo, has_kernel);
  // Capability refusals by node id, kept as notes when the node is placed.
  absl::flat_hash_map<int, std::string> refused;
  for (const Node& node : graph.nodes()) {
    std::vector<std::string> why;
    DeviceMask k = kernels.Mask(node, &why);
    if (k == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          node.DebugName(), " has no kernel", TypeAttrs(node),
          " that can run it on any device: ",
          MaskToString(topo, ~DeviceMask{0}),
          why.empty() ? "" : absl::StrCat("; ", absl::StrJoin(why, "; "))));
    }
    if (!why.empty()) refused[node.id()] = absl::StrJoin(why, "; ");
    c.kernel_mask[node.id()] = k;
    c.mask[node.id()] = k;
    RETURN_IF_ERROR(ApplyRequest(node, topo, soft_placement,
                                 refused.contains(node.id())
                                     ? refused[node.id()]
                                     : std::string(),
                                 &c));
  }
  RETURN_IF_ERROR(
      ApplyColocation(graph, topo, soft_placement, extra_groups, &c));
  for (auto& [id, why] : refused) {
    auto it = c.notes.find(id);
    c.notes[id] = it == c.notes.end() ? why : absl::StrCat(why, "; ", it->second);
  }
  return c;
}

}  // namespace sluice
