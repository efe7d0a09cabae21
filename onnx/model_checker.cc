// CheckOnnxModel: the IR version, then each graph (and subgraph) in order,
// with the names each graph and its ancestors define in scope, as
// onnx.checker's check_graph walks it.
#include "onnx/model_checker.h"

#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sluice {
namespace {

struct AttrSchema {
  const char* name;
  int type;  // onnx::AttributeProto::AttributeType
  bool required;
};

struct OpAttrSchema {
  const char* domain;  // "" for the default domain
  const char* op;
  int since;
  int first;  // index of its first attribute in kAttrSchemas
  int count;
};

#include "onnx/op_attr_schemas.inc"

constexpr int kMaxProblems = 20;

std::string NormalDomain(absl::string_view domain) {
  return domain == "ai.onnx" ? std::string() : std::string(domain);
}

// Every schema version of each (domain, op), ascending by since_version.
using SchemaIndex = absl::flat_hash_map<std::pair<std::string, std::string>,
                                        std::vector<const OpAttrSchema*>>;

const SchemaIndex& Schemas() {
  static const SchemaIndex* index = [] {
    auto* m = new SchemaIndex;
    for (const OpAttrSchema& s : kOpAttrSchemas) {
      (*m)[{s.domain, s.op}].push_back(&s);
    }
    return m;
  }();
  return *index;
}

bool DomainHasSchemas(const std::string& domain) {
  static const auto* domains = [] {
    auto* d = new absl::flat_hash_map<std::string, bool>;
    for (const OpAttrSchema& s : kOpAttrSchemas) (*d)[s.domain] = true;
    return d;
  }();
  return domains->contains(domain);
}

std::string TypeName(int type) {
  if (onnx::AttributeProto::AttributeType_IsValid(type)) {
    return onnx::AttributeProto::AttributeType_Name(
        static_cast<onnx::AttributeProto::AttributeType>(type));
  }
  return absl::StrCat("type ", type);
}

// The type the attribute's value fields say, UNDEFINED when none is set,
// -1 when fields of more than one type are set.
int TypeOfFields(const onnx::AttributeProto& a) {
  std::vector<int> set;
  if (a.has_f()) set.push_back(onnx::AttributeProto::FLOAT);
  if (a.has_i()) set.push_back(onnx::AttributeProto::INT);
  if (a.has_s()) set.push_back(onnx::AttributeProto::STRING);
  if (a.has_t()) set.push_back(onnx::AttributeProto::TENSOR);
  if (a.has_g()) set.push_back(onnx::AttributeProto::GRAPH);
  if (a.has_sparse_tensor()) set.push_back(onnx::AttributeProto::SPARSE_TENSOR);
  if (a.has_tp()) set.push_back(onnx::AttributeProto::TYPE_PROTO);
  if (a.floats_size() > 0) set.push_back(onnx::AttributeProto::FLOATS);
  if (a.ints_size() > 0) set.push_back(onnx::AttributeProto::INTS);
  if (a.strings_size() > 0) set.push_back(onnx::AttributeProto::STRINGS);
  if (a.tensors_size() > 0) set.push_back(onnx::AttributeProto::TENSORS);
  if (a.graphs_size() > 0) set.push_back(onnx::AttributeProto::GRAPHS);
  if (a.sparse_tensors_size() > 0) {
    set.push_back(onnx::AttributeProto::SPARSE_TENSORS);
  }
  if (a.type_protos_size() > 0)
    set.push_back(onnx::AttributeProto::TYPE_PROTOS);
  if (set.empty()) return onnx::AttributeProto::UNDEFINED;
  return set.size() == 1 ? set[0] : -1;
}

bool IsList(int type) {
  return type == onnx::AttributeProto::FLOATS ||
         type == onnx::AttributeProto::INTS ||
         type == onnx::AttributeProto::STRINGS ||
         type == onnx::AttributeProto::TENSORS ||
         type == onnx::AttributeProto::GRAPHS ||
         type == onnx::AttributeProto::SPARSE_TENSORS ||
         type == onnx::AttributeProto::TYPE_PROTOS;
}

// Names defined in a graph, with what defines them ("node 'a' (Relu)",
// "graph input 'x'"); `parent` is the enclosing graph's scope.
struct Scope {
  absl::flat_hash_map<std::string, std::string> writers;
  const Scope* parent = nullptr;

  const std::string* Find(const std::string& name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent) {
      auto it = s->writers.find(name);
      if (it != s->writers.end()) return &it->second;
    }
    return nullptr;
  }
};

class Checker {
 public:
  explicit Checker(const onnx::ModelProto& model) : model_(model) {}

  void CheckGraph(const onnx::GraphProto& graph, const Scope* parent) {
    Scope scope;
    scope.parent = parent;
    for (const onnx::ValueInfoProto& in : graph.input()) {
      std::string what = absl::StrCat("graph input '", in.name(), "'");
      if (!scope.writers.emplace(in.name(), what).second) {
        Add(absl::StrCat(what, " is declared twice"));
      }
    }
    absl::flat_hash_map<std::string, bool> initializers;
    for (const onnx::TensorProto& init : graph.initializer()) {
      if (!initializers.emplace(init.name(), true).second) {
        Add(absl::StrCat("initializer '", init.name(), "' is given twice"));
      }
      scope.writers.emplace(init.name(),
                            absl::StrCat("initializer '", init.name(), "'"));
    }
    for (const onnx::NodeProto& node : graph.node()) {
      CheckNode(node, scope);
      for (const std::string& out : node.output()) {
        if (out.empty()) continue;  // an absent optional output
        std::string what = NodeLabel(node);
        if (const std::string* other = scope.Find(out)) {
          Add(absl::StrCat("value '", out, "' is written by ", *other,
                           " and by ", what,
                           " (ONNX graphs are single assignment)"));
          continue;
        }
        scope.writers.emplace(out, std::move(what));
      }
    }
  }

  std::vector<std::string>& problems() { return problems_; }
  int dropped() const { return dropped_; }

 private:
  static std::string NodeLabel(const onnx::NodeProto& node) {
    std::string name = node.name().empty() && node.output_size() > 0
                           ? node.output(0)
                           : node.name();
    return absl::StrCat("node '", name, "' (", node.op_type(), ")");
  }

  void Add(std::string problem) {
    if (static_cast<int>(problems_.size()) < kMaxProblems) {
      problems_.push_back(std::move(problem));
    } else {
      ++dropped_;
    }
  }

  void CheckNode(const onnx::NodeProto& node, const Scope& scope) {
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.has_g()) CheckGraph(a.g(), &scope);
      for (const onnx::GraphProto& g : a.graphs()) CheckGraph(g, &scope);
    }
    const std::string domain = NormalDomain(node.domain());
    if (!DomainHasSchemas(domain)) return;
    const int opset = ImportedOpset(model_, domain);
    if (opset <= 0) return;  // the support check names the domain
    auto it = Schemas().find({domain, node.op_type()});
    if (it == Schemas().end()) return;
    const OpAttrSchema* schema = nullptr;
    for (const OpAttrSchema* s : it->second) {
      if (s->since <= opset) schema = s;
    }
    if (schema == nullptr) return;  // not an op yet at this opset
    std::string label = absl::StrCat(
        "node '",
        node.name().empty() && node.output_size() > 0 ? node.output(0)
                                                      : node.name(),
        "' (", node.op_type(), ", ", domain.empty() ? "" : domain + " ",
        "opset ", opset, ", version ", schema->since, ")");
    absl::flat_hash_map<std::string, bool> seen;
    for (int k = schema->first; k < schema->first + schema->count; ++k) {
      if (!kAttrSchemas[k].required) continue;
      bool given = false;
      for (const onnx::AttributeProto& a : node.attribute()) {
        given = given || a.name() == kAttrSchemas[k].name;
      }
      if (!given) {
        Add(absl::StrCat(label, ": required attribute '", kAttrSchemas[k].name,
                         "' (", TypeName(kAttrSchemas[k].type),
                         ") is missing"));
      }
    }
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (!seen.emplace(a.name(), true).second) {
        Add(absl::StrCat(label, ": attribute '", a.name(), "' is given twice"));
        continue;
      }
      if (a.name().rfind("__", 0) == 0) continue;  // internal, as the checker
      const AttrSchema* want = nullptr;
      std::vector<std::string> names;
      for (int k = schema->first; k < schema->first + schema->count; ++k) {
        names.push_back(kAttrSchemas[k].name);
        if (a.name() == kAttrSchemas[k].name) want = &kAttrSchemas[k];
      }
      if (want == nullptr) {
        Add(absl::StrCat(
            label, ": attribute '", a.name(), "' is not an ", "attribute of ",
            node.op_type(), " version ", schema->since, " (it has ",
            names.empty() ? "none" : absl::StrJoin(names, ", "), ")"));
        continue;
      }
      const int fields = TypeOfFields(a);
      const int declared =
          a.type() != onnx::AttributeProto::UNDEFINED ? a.type() : fields;
      if (declared != want->type) {
        Add(absl::StrCat(label, ": attribute '", a.name(), "' is ",
                         declared == onnx::AttributeProto::UNDEFINED
                             ? std::string("of no type")
                             : TypeName(declared),
                         ", the schema wants ", TypeName(want->type)));
        continue;
      }
      // The value must be in the field of the declared type (an empty list
      // sets none).
      if (fields != declared &&
          !(IsList(declared) && fields == onnx::AttributeProto::UNDEFINED)) {
        Add(absl::StrCat(label, ": attribute '", a.name(), "' is declared ",
                         TypeName(declared), " but its value is ",
                         fields < 0 ? std::string("in several fields")
                         : fields == onnx::AttributeProto::UNDEFINED
                             ? std::string("missing")
                             : TypeName(fields)));
      }
    }
  }

  const onnx::ModelProto& model_;
  std::vector<std::string> problems_;
  int dropped_ = 0;
};

}  // namespace

int OldestImportedIrVersion() { return 3; }
int NewestKnownIrVersion() { return kNewestKnownIrVersion; }

int ImportedOpset(const onnx::ModelProto& model, absl::string_view domain) {
  const std::string want = NormalDomain(domain);
  for (const onnx::OperatorSetIdProto& id : model.opset_import()) {
    if (NormalDomain(id.domain()) == want)
      return static_cast<int>(id.version());
  }
  return 0;
}

absl::Status CheckOnnxModel(const onnx::ModelProto& model,
                            absl::string_view model_name) {
  if (model.ir_version() < OldestImportedIrVersion() ||
      model.ir_version() > NewestKnownIrVersion()) {
    return absl::InvalidArgumentError(absl::StrCat(
        model_name, ": ir_version ", model.ir_version(),
        " is not supported; sluice reads ONNX IR versions ",
        OldestImportedIrVersion(), " to ", NewestKnownIrVersion()));
  }
  Checker checker(model);
  checker.CheckGraph(model.graph(), nullptr);
  std::vector<std::string>& problems = checker.problems();
  if (problems.empty()) return absl::OkStatus();
  const int total = static_cast<int>(problems.size()) + checker.dropped();
  std::string more =
      checker.dropped() > 0
          ? absl::StrCat("\n  ... and ", checker.dropped(), " more")
          : "";
  return absl::InvalidArgumentError(absl::StrCat(
      model_name, ": ", total, total == 1 ? " problem" : " problems",
      " that onnx.checker also rejects:\n  ", absl::StrJoin(problems, "\n  "),
      more));
}

}  // namespace sluice
