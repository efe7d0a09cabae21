// OpRegistry: registration checks and the global built-in registry.
#include "graph/op_registry.h"

#include <cstdio>
#include <cstdlib>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace sluice {
namespace {

// The schema's own consistency: every arg names a declared attr of the right
// kind, attr names are unique and defaults have the declared type.
absl::Status CheckOpDef(const OpDef& def) {
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrCat("op ", def.name, ": ", what));
  };
  if (def.name.empty()) return bad("empty op name");
  if (!def.shape_fn) return bad("no shape function");
  absl::flat_hash_set<std::string> names;
  for (const AttrDef& a : def.attrs) {
    if (!names.insert(a.name).second) {
      return bad(absl::StrCat("attribute '", a.name, "' declared twice"));
    }
    if (a.default_value.has_value()) {
      absl::Status s = CheckAttrType(*a.default_value, a.type);
      if (!s.ok()) {
        return bad(absl::StrCat("default of '", a.name, "' ", s.message()));
      }
    }
  }
  for (const auto* args : {&def.inputs, &def.outputs}) {
    for (const ArgDef& arg : *args) {
      if (!arg.type_list_attr.empty()) {
        const AttrDef* t = def.FindAttr(arg.type_list_attr);
        if (t == nullptr || t->type != AttrType::kListType) {
          return bad(absl::StrCat("arg '", arg.name, "' names type list attr '",
                                  arg.type_list_attr,
                                  "' which is not declared"));
        }
        continue;
      }
      if (arg.fixed_type == DT_INVALID) {
        const AttrDef* t = def.FindAttr(arg.type_attr);
        if (t == nullptr || t->type != AttrType::kType) {
          return bad(absl::StrCat("arg '", arg.name, "' names type attr '",
                                  arg.type_attr, "' which is not declared"));
        }
      }
      if (!arg.number_attr.empty()) {
        const AttrDef* n = def.FindAttr(arg.number_attr);
        if (n == nullptr || n->type != AttrType::kInt) {
          return bad(absl::StrCat("arg '", arg.name, "' names number attr '",
                                  arg.number_attr, "' which is not declared"));
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

const OpRegistry* OpRegistry::Global() {
  static const OpRegistry* const registry = [] {
    auto* r = new OpRegistry;
    RegisterArrayOps(r);
    RegisterMathOps(r);
    RegisterNnOps(r);
    RegisterDynamicOps(r);
    RegisterControlFlowOps(r);
    RegisterSeqOps(r);
    RegisterVisionOps(r);
    RegisterBitOps(r);
    RegisterSelectOps(r);
    RegisterLinalgOps(r);
    RegisterMlOps(r);
    RegisterCudaKernelOps(r);
    return r;
  }();
  return registry;
}

absl::Status OpRegistry::Register(OpDef def) {
  RETURN_IF_ERROR(CheckOpDef(def));
  if (ops_.find(def.name) != ops_.end()) {
    return absl::AlreadyExistsError(
        absl::StrCat("op ", def.name, " is registered already"));
  }
  std::string name = def.name;
  ops_.emplace(std::move(name), std::make_unique<OpDef>(std::move(def)));
  return absl::OkStatus();
}

const OpDef* OpRegistry::Find(std::string_view name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

std::vector<std::string> OpRegistry::OpNames() const {
  std::vector<std::string> names;
  names.reserve(ops_.size());
  for (const auto& [name, def] : ops_) names.push_back(name);
  return names;
}

void RegisterOrDie(OpRegistry* registry, OpDef def) {
  absl::Status s = registry->Register(std::move(def));
  if (!s.ok()) {
    // A broken built-in schema is a programmer error.
    std::fprintf(stderr, "sluice: %s\n", std::string(s.message()).c_str());
    std::abort();
  }
}

}  // namespace sluice
