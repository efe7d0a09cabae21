// KernelRegistry: lookup of kernels by op, device type and type attributes.
#include "kernels/kernel_registry.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

// "T=float32, Tindices=int64": the node's type attributes.
std::string NodeTypeAttrs(const Node& node) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : node.attrs().values()) {
    if (value.value_case() == AttrValue::kType) {
      parts.push_back(absl::StrCat(name, "=", DataTypeName(value.type())));
    }
  }
  if (parts.empty()) return "no type attributes";
  return absl::StrJoin(parts, ", ");
}

// "{T in [float32, int32]}".
std::string ConstraintString(const KernelDef& def) {
  std::vector<std::string> parts;
  for (const auto& [attr, types] : def.type_constraints) {
    parts.push_back(absl::StrCat(
        attr, " in [",
        absl::StrJoin(types, ", ",
                      [](std::string* out, DataType t) {
                        out->append(DataTypeName(t));
                      }),
        "]"));
  }
  if (parts.empty()) return "{any dtype}";
  return absl::StrCat("{", absl::StrJoin(parts, "; "), "}");
}

bool Matches(const KernelDef& def, const Node& node) {
  for (const auto& [attr, types] : def.type_constraints) {
    absl::StatusOr<DataType> t = node.attrs().GetType(attr);
    if (!t.ok()) return false;
    bool found = false;
    for (DataType allowed : types) found = found || allowed == *t;
    if (!found) return false;
  }
  return true;
}

}  // namespace

const KernelRegistry* KernelRegistry::Global() {
  static const KernelRegistry* const kRegistry = [] {
    auto* r = new KernelRegistry();
    RegisterCpuKernels(r);
#ifdef SLUICE_WITH_CUDA
    RegisterCudaKernels(r);
#endif
    return r;
  }();
  return kRegistry;
}

void KernelRegistry::Register(KernelDef def) {
  std::string op = def.op;
  kernels_.emplace(std::move(op), std::move(def));
}

absl::StatusOr<const KernelDef*> KernelRegistry::Find(const Node& node,
                                                      DeviceType device) const {
  std::vector<std::string> registered;
  auto [begin, end] = kernels_.equal_range(node.op());
  for (auto it = begin; it != end; ++it) {
    const KernelDef& def = it->second;
    if (def.device != device) continue;
    if (Matches(def, node)) return &def;
    registered.push_back(ConstraintString(def));
  }
  std::string dev = DeviceTypeName(device);
  if (registered.empty()) {
    return absl::NotFoundError(absl::StrCat("no ", dev, " kernel for op ",
                                            node.op(), " (", node.DebugName(),
                                            ")"));
  }
  return absl::NotFoundError(absl::StrCat(
      "no ", dev, " kernel for op ", node.op(), " with ", NodeTypeAttrs(node),
      " (", node.DebugName(), "); registered: ",
      absl::StrJoin(registered, ", ")));
}

absl::StatusOr<std::unique_ptr<OpKernel>> KernelRegistry::Create(
    const Node& node, DeviceType device) const {
  ASSIGN_OR_RETURN(const KernelDef* def, Find(node, device));
  return def->factory(node);
}

std::vector<const KernelDef*> KernelRegistry::KernelsFor(
    const std::string& op) const {
  std::vector<const KernelDef*> out;
  auto [begin, end] = kernels_.equal_range(op);
  for (auto it = begin; it != end; ++it) out.push_back(&it->second);
  return out;
}

}  // namespace sluice
