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

// "the gpu kernel for Softmax cannot run it: rank 9 > 8", with the check's
// code (UNIMPLEMENTED if it returned an unusual one).
absl::Status Refusal(const std::string& op, DeviceType device,
                     const absl::Status& why) {
  absl::StatusCode code = why.code();
  if (code != absl::StatusCode::kFailedPrecondition &&
      code != absl::StatusCode::kInvalidArgument) {
    code = absl::StatusCode::kUnimplemented;
  }
  return absl::Status(code, absl::StrCat("the ", DeviceTypeName(device),
                                         " kernel for ", op,
                                         " cannot run it: ", why.message()));
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
  if (def.supports) {
    // No kernel is made for a node its capability check refuses, whoever
    // calls the factory (Create, or a plan that found the def itself).
    def.factory = [op = def.op, device = def.device, supports = def.supports,
                   factory = std::move(def.factory)](const Node& node)
        -> absl::StatusOr<std::unique_ptr<OpKernel>> {
      if (absl::Status why = supports(node); !why.ok()) {
        return Refusal(op, device, why);
      }
      return factory(node);
    };
  }
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

absl::Status KernelRegistry::Supports(const Node& node,
                                      DeviceType device) const {
  ASSIGN_OR_RETURN(const KernelDef* def, Find(node, device));
  if (!def->supports) return absl::OkStatus();
  absl::Status why = def->supports(node);
  if (why.ok()) return why;
  return Refusal(def->op, device, why);
}

absl::StatusOr<std::unique_ptr<OpKernel>> KernelRegistry::Create(
    const Node& node, DeviceType device) const {
  ASSIGN_OR_RETURN(const KernelDef* def, Find(node, device));
  absl::StatusOr<std::unique_ptr<OpKernel>> kernel = def->factory(node);
  if (kernel.ok()) return kernel;
  // Find's errors name the node already; the factory's do not.
  return absl::Status(kernel.status().code(),
                      absl::StrCat(node.DebugName(), " on ",
                                   DeviceTypeName(device), ": ",
                                   kernel.status().message()));
}

std::function<absl::Status(const Node& node, DeviceType type)>
KernelCapabilityQuery() {
  return [](const Node& node, DeviceType type) {
    return KernelRegistry::Global()->Supports(node, type);
  };
}

std::vector<const KernelDef*> KernelRegistry::KernelsFor(
    const std::string& op) const {
  std::vector<const KernelDef*> out;
  auto [begin, end] = kernels_.equal_range(op);
  for (auto it = begin; it != end; ++it) out.push_back(&it->second);
  return out;
}

}  // namespace sluice
