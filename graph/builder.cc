// GraphBuilder, part 1: names, attributes, inputs and topological order, and
// the BuildGraph / ValidateGraphDef entry points. Inference, the signature
// and assembly are in builder_infer.cc.
#include "graph/builder.h"

#include <algorithm>
#include <functional>
#include <queue>

#include "absl/strings/str_cat.h"
#include "core/escape.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/tensor_proto.h"

namespace sluice {

GraphBuilder::GraphBuilder(const GraphDef& def, const GraphSource& source,
                           const OpRegistry* registry,
                           ConstValues const_values)
    : def_(def),
      source_(source),
      registry_(registry),
      const_value_mode_(const_values) {}

std::string GraphBuilder::NodeLabel(int id) const {
  const NodeState& n = nodes_[id];
  std::string out =
      n.def->name().empty()
          ? absl::StrCat("node #", id)
          : absl::StrCat("node '", EscapeForTerminal(n.def->name(), 200), "'");
  absl::StrAppend(&out, " (", n.def->op().empty() ? "no op" : n.def->op(),
                  ")");
  if (n.line > 0) absl::StrAppend(&out, " at line ", n.line);
  return out;
}

void GraphBuilder::NodeError(int id, const absl::Status& status) {
  nodes_[id].ok = false;
  errors_.push_back(absl::Status(
      status.code(), absl::StrCat(NodeLabel(id), ": ", status.message())));
}

void GraphBuilder::NodeError(int id, const std::string& message) {
  NodeError(id, absl::InvalidArgumentError(message));
}

void GraphBuilder::Error(absl::StatusCode code, const std::string& message) {
  errors_.push_back(absl::Status(code, message));
}

void GraphBuilder::CheckVersion() {
  int v = def_.format_version();
  if (v < 0 || v > kGraphFormatVersion) {
    Error(absl::StatusCode::kInvalidArgument,
          absl::StrCat("graph: format_version ", v,
                       " is not supported; this build reads versions 0 to ",
                       kGraphFormatVersion,
                       v > kGraphFormatVersion ? " (the file is newer)" : ""));
  }
}

void GraphBuilder::IndexNodes() {
  nodes_.resize(def_.node_size());
  for (int i = 0; i < def_.node_size(); ++i) {
    NodeState& n = nodes_[i];
    n.def = &def_.node(i);
    if (i < static_cast<int>(source_.node_lines_by_index.size())) {
      n.line = source_.node_lines_by_index[i];
    } else if (auto it = source_.node_lines.find(n.def->name());
               it != source_.node_lines.end()) {
      n.line = it->second;
    }
    const std::string& name = n.def->name();
    if (name.empty()) {
      NodeError(i, "node has no name");
      n.duplicate = true;  // cannot be referred to; skip it from here on
      continue;
    }
    if (name.find_first_of(":^") != std::string::npos) {
      NodeError(i, "node names must not contain ':' or '^'");
      n.duplicate = true;
      continue;
    }
    auto [it, inserted] = index_.emplace(name, i);
    if (!inserted) {
      const NodeState& first = nodes_[it->second];
      NodeError(i, absl::StrCat(
                       "duplicate node name; first defined as node #",
                       it->second,
                       first.line > 0 ? absl::StrCat(" at line ", first.line)
                                      : std::string()));
      n.duplicate = true;
    }
  }
}

namespace {

// The type attrs that some input argument takes its dtype from.
bool BoundToInput(const OpDef& op, const std::string& attr) {
  for (const ArgDef& arg : op.inputs) {
    if (arg.type_attr == attr) return true;
  }
  return false;
}

std::string TypeList(const std::vector<DataType>& types) {
  return absl::StrJoin(types, ", ", [](std::string* out, DataType t) {
    absl::StrAppend(out, DataTypeName(t));
  });
}

int DataInputCount(const NodeDef& def) {
  int n = 0;
  for (const std::string& in : def.input()) {
    if (in.empty() || in[0] != '^') ++n;
  }
  return n;
}

}  // namespace

void GraphBuilder::ResolveAttrs(int id) {
  NodeState& n = nodes_[id];
  const OpDef& op = *n.op;
  // Unknown attributes.
  std::vector<std::string> declared;
  for (const AttrDef& a : op.attrs) declared.push_back(a.name);
  for (const auto& [name, value] : n.def->attr()) {
    // Names starting with '_' belong to the runtime, not the op (for
    // example "_colocate", the placer's colocation group): kept, unchecked.
    if (!name.empty() && name[0] == '_') {
      n.attrs[name] = value;
      continue;
    }
    if (op.FindAttr(name) == nullptr) {
      NodeError(id, absl::StrCat(
                        "unknown attribute '", name, "' (", op.name, " has ",
                        declared.empty() ? std::string("none")
                                         : absl::StrJoin(declared, ", "),
                        ")"));
      continue;
    }
    n.attrs[name] = value;
  }
  // Input list counts (Concat's N) come from the inputs when absent.
  int fixed_inputs = 0, list_args = 0;
  for (const ArgDef& arg : op.inputs) {
    if (arg.number_attr.empty()) {
      ++fixed_inputs;
    } else {
      ++list_args;
    }
  }
  for (const ArgDef& arg : op.inputs) {
    if (arg.number_attr.empty() || n.attrs.count(arg.number_attr) > 0 ||
        list_args != 1) {
      continue;
    }
    n.attrs[arg.number_attr] =
        MakeIntAttr(DataInputCount(*n.def) - fixed_inputs);
  }
  // Presence, type, defaults.
  for (const AttrDef& a : op.attrs) {
    auto it = n.attrs.find(a.name);
    if (it == n.attrs.end()) {
      if (a.default_value.has_value()) {
        n.attrs[a.name] = *a.default_value;
      } else if (a.type == AttrType::kType &&
                 (BoundToInput(op, a.name) ||
                  (op.name == "Const" && a.name == "dtype"))) {
        // Inferred later, from the inputs or the value.
      } else {
        NodeError(id, absl::StrCat("missing required attribute '", a.name,
                                   "' (", AttrTypeName(a.type), ")"));
      }
      continue;
    }
    absl::Status type_ok = CheckAttrType(it->second, a.type);
    if (!type_ok.ok()) {
      NodeError(id, absl::StrCat("attribute '", a.name, "' ",
                                 type_ok.message()));
      n.attrs.erase(it);
      continue;
    }
    if (a.type == AttrType::kType) {
      DataType t = it->second.type();
      const std::vector<DataType>& allowed =
          a.allowed_types.empty() ? kAllTypes : a.allowed_types;
      if (std::find(allowed.begin(), allowed.end(), t) == allowed.end()) {
        NodeError(id, absl::StrCat("attribute ", a.name, "=",
                                   DataTypeName(t), " is not allowed (allowed: ",
                                   TypeList(allowed), ")"));
        n.attrs.erase(it);
      }
    }
  }
  // List arguments need a count in [1, kMaxListArgs].
  for (const auto* args : {&op.inputs, &op.outputs}) {
    for (const ArgDef& arg : *args) {
      if (arg.number_attr.empty()) continue;
      auto it = n.attrs.find(arg.number_attr);
      if (it == n.attrs.end()) continue;
      int64_t count = it->second.i();
      if (count < 1 || count > kMaxListArgs) {
        NodeError(id, absl::StrCat("attribute ", arg.number_attr, "=", count,
                                   " must be in [1, ", kMaxListArgs, "] for '",
                                   arg.name, "'"));
        n.attrs.erase(it);
      }
    }
  }
  if (op.name == "Const" && n.attrs.count("value") > 0) ResolveConst(id);
  BuildSubgraphs(id);
  // Output count, when every list count is known.
  int outputs = 0;
  for (const ArgDef& arg : op.outputs) {
    if (!arg.type_list_attr.empty()) {
      auto it = n.attrs.find(arg.type_list_attr);
      if (it == n.attrs.end()) return;  // reported as missing already
      outputs += it->second.list().type_size();
      continue;
    }
    if (arg.number_attr.empty()) {
      ++outputs;
      continue;
    }
    auto it = n.attrs.find(arg.number_attr);
    if (it == n.attrs.end()) return;  // num_outputs stays unknown
    outputs += static_cast<int>(it->second.i());
  }
  n.num_outputs = outputs;
}

// A value from `known_values` when it matches the proto's dtype and shape;
// otherwise the proto decoded.
static absl::StatusOr<Tensor> DecodeConst(
    const NodeDef& def, const TensorProto& proto, const GraphSource& source,
    const absl::flat_hash_map<std::string, Tensor>* known_values) {
  if (known_values != nullptr) {
    auto known = known_values->find(def.name());
    absl::StatusOr<Shape> shape = ShapeFromProto(proto.shape(), true);
    if (known != known_values->end() && shape.ok() &&
        *shape == known->second.shape() &&
        proto.dtype() == known->second.dtype()) {
      return known->second;
    }
  }
  return TensorFromProto(proto, source.base_dir, source.external_data);
}

void GraphBuilder::ResolveConst(int id) {
  NodeState& n = nodes_[id];
  const TensorProto& proto = n.attrs["value"].tensor();
  // A described splat is checked through its one value; the node's output
  // dtype and shape (ConstShape) say the rest.
  const bool describe =
      const_value_mode_ == ConstValues::kDescribeSplats && IsSplat(proto);
  absl::StatusOr<Tensor> value =
      describe ? SplatValue(proto)
               : DecodeConst(*n.def, proto, source_, const_values_);
  if (!value.ok()) {
    NodeError(id, absl::Status(value.status().code(),
                               absl::StrCat("attribute 'value': ",
                                            value.status().message())));
    return;
  }
  auto dtype = n.attrs.find("dtype");
  if (dtype == n.attrs.end()) {
    n.attrs["dtype"] = MakeTypeAttr(value->dtype());
  } else if (dtype->second.type() != value->dtype()) {
    NodeError(id, absl::StrCat("attribute dtype=",
                               DataTypeName(dtype->second.type()),
                               " does not match the value's dtype ",
                               DataTypeName(value->dtype())));
    return;
  }
  if (describe) {
    n.described = true;
  } else {
    n.value = *std::move(value);
    // The Tensor holds the bytes from here on: the node's attribute keeps
    // dtype and shape (and an external range), so that neither the builder
    // nor the Graph's def() and attrs() hold a second copy.
    ClearTensorData(n.attrs["value"].mutable_tensor());
  }
}

void GraphBuilder::BuildSubgraphs(int id) {
  NodeState& n = nodes_[id];
  for (const AttrDef& a : n.op->attrs) {
    if (a.type != AttrType::kGraph) continue;
    auto it = n.attrs.find(a.name);
    if (it == n.attrs.end()) continue;  // reported as missing already
    // An optional graph attribute left empty (its default: CudaKernel's
    // cpu_fallback) holds no subgraph.
    if (a.default_value.has_value() && it->second.graph().node_size() == 0) {
      continue;
    }
    GraphSource source;
    source.path = source_.path;
    source.base_dir = source_.base_dir;
    source.external_data = source_.external_data;
    GraphBuilder sub(it->second.graph(), source, registry_,
                     const_value_mode_);
    std::unique_ptr<Graph> graph = sub.Build();
    if (graph == nullptr) {
      std::vector<std::string> lines;
      for (const absl::Status& e : sub.errors()) {
        lines.emplace_back(e.message());
      }
      NodeError(id, absl::StrCat("subgraph '", a.name, "': ",
                                 absl::StrJoin(lines, "; ")));
      continue;
    }
    n.subgraphs[a.name] = std::move(graph);
  }
}

void GraphBuilder::ResolveInputs(int id) {
  NodeState& n = nodes_[id];
  bool seen_control = false;
  for (int i = 0; i < n.def->input_size(); ++i) {
    const std::string& text = n.def->input(i);
    absl::StatusOr<ParsedInput> parsed = ParseInputString(text);
    if (!parsed.ok()) {
      NodeError(id, absl::StrCat("input ", i, ": ", parsed.status().message()));
      continue;
    }
    if (!parsed->control && seen_control) {
      NodeError(id, absl::StrCat("data input ", i, " '", text,
                                 "' comes after a control input; control "
                                 "inputs must be last"));
      continue;
    }
    seen_control |= parsed->control;
    auto it = index_.find(parsed->node);
    if (it == index_.end()) {
      NodeError(id, absl::StrCat("input ", i, " '", text,
                                 "' refers to a node that does not exist: '",
                                 parsed->node, "'"));
      continue;
    }
    int src = it->second;
    if (parsed->control) {
      n.control_inputs.push_back(src);
      nodes_[src].successors.push_back(id);
      continue;
    }
    const NodeState& producer = nodes_[src];
    if (producer.num_outputs >= 0 && parsed->port >= producer.num_outputs) {
      NodeError(id, absl::StrCat("input ", i, " '", text, "' asks for output ",
                                 parsed->port, " of ", NodeLabel(src),
                                 ", which has ", producer.num_outputs,
                                 producer.num_outputs == 1 ? " output"
                                                           : " outputs"));
      continue;
    }
    n.inputs.push_back(TensorRef{src, parsed->port});
    nodes_[src].successors.push_back(id);
  }
}

void GraphBuilder::CheckInputCount(int id) {
  NodeState& n = nodes_[id];
  const OpDef& op = *n.op;
  int expected = 0;
  std::vector<std::string> names;
  for (const ArgDef& arg : op.inputs) {
    if (!arg.type_list_attr.empty()) {
      auto it = n.attrs.find(arg.type_list_attr);
      if (it == n.attrs.end()) return;  // reported already
      int count = it->second.list().type_size();
      expected += count;
      names.push_back(absl::StrCat(arg.name, "[", count, "]"));
      continue;
    }
    if (arg.number_attr.empty()) {
      ++expected;
      names.push_back(arg.name);
      continue;
    }
    auto it = n.attrs.find(arg.number_attr);
    if (it == n.attrs.end()) return;  // reported already
    expected += static_cast<int>(it->second.i());
    names.push_back(absl::StrCat(arg.name, "[", it->second.i(), "]"));
  }
  int got = DataInputCount(*n.def);
  if (got != expected) {
    NodeError(id, absl::StrCat(
                      "expects ", expected, expected == 1 ? " input" : " inputs",
                      names.empty() ? std::string()
                                    : absl::StrCat(" (", absl::StrJoin(names, ", "),
                                                   ")"),
                      ", got ", got));
  }
}

void GraphBuilder::SortTopologically() {
  const int count = static_cast<int>(nodes_.size());
  std::vector<int> indegree(count, 0);
  for (int i = 0; i < count; ++i) {
    indegree[i] = static_cast<int>(nodes_[i].inputs.size() +
                                   nodes_[i].control_inputs.size());
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < count; ++i) {
    if (!nodes_[i].duplicate && indegree[i] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    int id = ready.top();
    ready.pop();
    topo_order_.push_back(id);
    for (int succ : nodes_[id].successors) {
      if (--indegree[succ] == 0) ready.push(succ);
    }
  }
  std::vector<int> remaining;
  for (int i = 0; i < count; ++i) {
    if (!nodes_[i].duplicate && indegree[i] > 0) remaining.push_back(i);
  }
  if (!remaining.empty()) ReportCycles(remaining);
}

void GraphBuilder::ReportCycles(const std::vector<int>& remaining) {
  // Every remaining node has a remaining predecessor, so walking backwards
  // from one must revisit a node: that closes a cycle. Nodes downstream of a
  // reported cycle are covered by it and get no error of their own.
  std::vector<char> left(nodes_.size(), 0), covered(nodes_.size(), 0);
  for (int id : remaining) left[id] = 1;
  auto predecessor = [&](int id) {
    for (const TensorRef& r : nodes_[id].inputs) {
      if (left[r.node] && !covered[r.node]) return r.node;
    }
    for (int c : nodes_[id].control_inputs) {
      if (left[c] && !covered[c]) return c;
    }
    return -1;
  };
  for (int start : remaining) {
    if (covered[start]) continue;
    std::vector<int> path;
    absl::flat_hash_map<int, int> position;
    int cur = start;
    while (cur >= 0 && !position.contains(cur)) {
      position[cur] = static_cast<int>(path.size());
      path.push_back(cur);
      cur = predecessor(cur);
    }
    if (cur < 0) continue;  // cannot happen; stay safe
    std::vector<int> cycle(path.begin() + position[cur], path.end());
    std::reverse(cycle.begin(), cycle.end());  // now in data-flow order
    std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()),
                cycle.end());
    // A long cycle is named by its first nodes and a count, so the
    // message stays one readable line.
    constexpr size_t kNamesShown = 10;
    std::vector<std::string> names;
    for (size_t i = 0; i < cycle.size() && i < kNamesShown; ++i) {
      names.push_back(EscapeForTerminal(nodes_[cycle[i]].def->name(), 200));
    }
    if (cycle.size() > kNamesShown) {
      names.push_back(absl::StrCat(
          "... and ",
          FormatCount(static_cast<int64_t>(cycle.size() - kNamesShown)),
          " more"));
    }
    names.push_back(names.front());
    NodeError(cycle.front(),
              absl::StrCat("cycle: ", absl::StrJoin(names, " -> ")));
    // Cover the cycle and everything it feeds.
    std::vector<int> stack(cycle.begin(), cycle.end());
    while (!stack.empty()) {
      int id = stack.back();
      stack.pop_back();
      if (covered[id] || !left[id]) continue;
      covered[id] = 1;
      nodes_[id].ok = false;
      for (int succ : nodes_[id].successors) stack.push_back(succ);
    }
  }
}

std::unique_ptr<Graph> GraphBuilder::Build() {
  CheckVersion();
  if (def_.node_size() == 0) {
    Error(absl::StatusCode::kInvalidArgument, "graph: has no nodes");
  }
  IndexNodes();
  for (int id = 0; id < static_cast<int>(nodes_.size()); ++id) {
    NodeState& n = nodes_[id];
    if (n.duplicate) continue;
    n.op = registry_->Find(n.def->op());
    if (n.op == nullptr) {
      NodeError(id, n.def->op().empty()
                        ? std::string("node has no op")
                        : absl::StrCat("unknown op '", n.def->op(), "'"));
      continue;
    }
    ResolveAttrs(id);
  }
  for (int id = 0; id < static_cast<int>(nodes_.size()); ++id) {
    if (nodes_[id].duplicate) continue;
    ResolveInputs(id);
    if (nodes_[id].op != nullptr) CheckInputCount(id);
  }
  SortTopologically();
  for (int id : topo_order_) Infer(id);
  ResolveSignature();
  if (!errors_.empty()) return nullptr;
  return Assemble();
}

absl::StatusOr<std::unique_ptr<const Graph>> BuildGraph(
    const GraphDef& def, const GraphSource& source, ConstValues const_values) {
  GraphBuilder builder(def, source, OpRegistry::Global(), const_values);
  std::unique_ptr<Graph> graph = builder.Build();
  if (graph == nullptr) {
    std::vector<std::string> lines;
    for (const absl::Status& e : builder.errors()) {
      lines.emplace_back(e.message());
    }
    return absl::InvalidArgumentError(absl::StrJoin(lines, "\n"));
  }
  return std::unique_ptr<const Graph>(std::move(graph));
}

absl::StatusOr<std::unique_ptr<const Graph>> BuildGraphSharingConsts(
    const GraphDef& def, const GraphSource& source,
    const absl::flat_hash_map<std::string, Tensor>& const_values) {
  GraphBuilder builder(def, source, OpRegistry::Global());
  builder.ShareConstValues(&const_values);
  std::unique_ptr<Graph> graph = builder.Build();
  if (graph == nullptr) {
    std::vector<std::string> lines;
    for (const absl::Status& e : builder.errors()) {
      lines.emplace_back(e.message());
    }
    return absl::InvalidArgumentError(absl::StrJoin(lines, "\n"));
  }
  return std::unique_ptr<const Graph>(std::move(graph));
}

std::vector<absl::Status> ValidateGraphDef(const GraphDef& def,
                                           const GraphSource& source) {
  GraphBuilder builder(def, source, OpRegistry::Global(),
                       ConstValues::kDescribeSplats);
  builder.Build();
  return builder.errors();
}

}  // namespace sluice
