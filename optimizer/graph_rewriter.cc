// GraphRewriter and the helpers the passes share.
#include "optimizer/graph_rewriter.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/tensor_proto.h"
#include "graph/attr_map.h"
#include "graph/builder.h"
#include "graph/loader.h"

namespace sluice {

GraphRewriter::GraphRewriter(const Graph& graph) : graph_(graph) {}

void GraphRewriter::Remove(int id) { removed_.insert(id); }

void GraphRewriter::Forward(TensorRef from, TensorRef to) {
  forward_[from] = to;
}

void GraphRewriter::Replace(int id, NewNode node) {
  names_.insert(node.name);
  replaced_[id] = std::move(node);
}

void GraphRewriter::Add(int before, NewNode node) {
  names_.insert(node.name);
  added_[before].push_back(std::move(node));
}

void GraphRewriter::SetGraphOutput(int index, std::string tensor) {
  outputs_[index] = std::move(tensor);
}

std::string GraphRewriter::UniqueName(const std::string& base) {
  std::string name = base;
  for (int i = 1; graph_.FindNode(name) != nullptr || names_.contains(name);
       ++i) {
    name = absl::StrCat(base, "_", i);
  }
  names_.insert(name);
  return name;
}

TensorRef GraphRewriter::Resolve(TensorRef ref) const {
  // A chain of forwards is at most as long as the graph; a cycle (a pass
  // bug) stops there and Build reports the dangling reference.
  for (int hops = 0; hops <= graph_.num_nodes(); ++hops) {
    auto it = forward_.find(ref);
    if (it == forward_.end()) return ref;
    ref = it->second;
  }
  return ref;
}

absl::StatusOr<std::string> GraphRewriter::InputString(TensorRef ref) const {
  const TensorRef to = Resolve(ref);
  if (removed_.contains(to.node) && !replaced_.contains(to.node)) {
    return absl::InternalError(absl::StrCat("reads ",
                                            graph_.node(to.node).DebugName(),
                                            ", which the pass removed"));
  }
  const std::string& name = replaced_.contains(to.node)
                                ? replaced_.at(to.node).name
                                : graph_.node(to.node).name();
  return to.port == 0 ? name : absl::StrCat(name, ":", to.port);
}

absl::Status GraphRewriter::Emit(const NewNode& node,
                                 const std::vector<int>& control, GraphDef* def,
                                 GraphSource* source,
                                 ConstValues* const_values) const {
  NodeDef* nd = def->add_node();
  nd->set_name(node.name);
  nd->set_op(node.op);
  nd->set_device(node.device);
  for (const auto& [name, value] : node.attrs)
    (*nd->mutable_attr())[name] = value;
  if (node.value.has_value()) {
    (*nd->mutable_attr())["dtype"] = MakeTypeAttr(node.value->dtype());
    // The bytes stay in the Tensor, shared with the new graph (Build:
    // BuildGraphSharingConsts); the attribute says dtype and shape.
    (*nd->mutable_attr())["value"] =
        MakeTensorAttr(TensorDescriptionProto(*node.value));
    const_values->emplace(node.name, *node.value);
  }
  for (const auto& in : node.inputs) {
    if (const auto* ref = std::get_if<TensorRef>(&in)) {
      absl::StatusOr<std::string> s = InputString(*ref);
      if (!s.ok()) {
        return absl::InternalError(
            absl::StrCat("new node '", node.name, "' ", s.status().message()));
      }
      nd->add_input(*s);
    } else {
      nd->add_input(std::get<std::string>(in));
    }
  }
  std::vector<std::string> seen;
  for (int c : control) {
    TensorRef to = Resolve({c, 0});
    if (removed_.contains(to.node) && !replaced_.contains(to.node)) continue;
    std::string name = absl::StrCat("^", replaced_.contains(to.node)
                                             ? replaced_.at(to.node).name
                                             : graph_.node(to.node).name());
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    seen.push_back(name);
    nd->add_input(name);
  }
  source->node_lines_by_index.push_back(node.source_line);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<const Graph>> GraphRewriter::Build() const {
  GraphDef def = graph_.def();
  def.clear_node();
  def.mutable_signature()->clear_inputs();
  def.mutable_signature()->clear_outputs();
  GraphSource source;
  source.base_dir = graph_.base_dir();
  ConstValues values;
  for (int id = 0; id < graph_.num_nodes(); ++id) {
    if (auto it = added_.find(id); it != added_.end()) {
      for (const NewNode& n : it->second) {
        RETURN_IF_ERROR(Emit(n, {}, &def, &source, &values));
      }
    }
    const Node& old = graph_.node(id);
    std::vector<int> control(old.control_inputs().begin(),
                             old.control_inputs().end());
    if (auto it = replaced_.find(id); it != replaced_.end()) {
      RETURN_IF_ERROR(Emit(it->second, control, &def, &source, &values));
      continue;
    }
    if (removed_.contains(id)) continue;
    NewNode keep;
    keep.name = old.name();
    keep.op = old.op();
    keep.device = old.requested_device();
    for (const auto& [name, value] : graph_.def().node(id).attr()) {
      keep.attrs[name] = value;
    }
    for (const TensorRef& in : old.inputs()) keep.inputs.push_back(in);
    keep.source_line = old.source_line();
    if (old.const_value() != nullptr) {
      values.emplace(old.name(), *old.const_value());
    }
    absl::Status s = Emit(keep, control, &def, &source, &values);
    if (!s.ok()) {
      return absl::InternalError(
          absl::StrCat(old.DebugName(), " ", s.message()));
    }
  }
  for (const GraphInput& in : graph_.inputs()) {
    TensorInfo* info = def.mutable_signature()->add_inputs();
    for (const TensorInfo& old : graph_.def().signature().inputs()) {
      if (old.name() == in.name) *info = old;
    }
    info->set_name(in.name);
  }
  for (int k = 0; k < static_cast<int>(graph_.outputs().size()); ++k) {
    const GraphOutput& out = graph_.outputs()[k];
    TensorInfo* info = def.mutable_signature()->add_outputs();
    for (const TensorInfo& old : graph_.def().signature().outputs()) {
      if (old.name() == out.name) *info = old;
    }
    info->set_name(out.name);
    if (auto it = outputs_.find(k); it != outputs_.end()) {
      info->set_tensor(it->second);
      continue;
    }
    absl::StatusOr<std::string> tensor = InputString(out.tensor);
    if (!tensor.ok()) {
      return absl::InternalError(absl::StrCat("graph output '", out.name, "' ",
                                              tensor.status().message()));
    }
    info->set_tensor(*tensor);
  }
  absl::StatusOr<std::unique_ptr<const Graph>> built =
      BuildGraphSharingConsts(def, source, values);
  if (!built.ok()) {
    return absl::InternalError(absl::StrCat(
        "the rewritten graph does not validate: ", built.status().message()));
  }
  return built;
}

const Tensor* ConstValueOf(const Graph& graph, TensorRef ref) {
  if (ref.node < 0) return nullptr;
  return graph.node(ref.node).const_value();
}

std::optional<double> ScalarConstOf(const Graph& graph, TensorRef ref) {
  const Tensor* t = ConstValueOf(graph, ref);
  if (t == nullptr || t->NumElements() != 1 || !t->on_host()) {
    return std::nullopt;
  }
  switch (t->dtype()) {
    case DT_FLOAT:
      return t->data<float>()[0];
    case DT_DOUBLE:
      return t->data<double>()[0];
    case DT_FLOAT16:
      return static_cast<double>(t->data<half>()[0]);
    case DT_BFLOAT16:
      return static_cast<double>(t->data<bfloat16>()[0]);
    case DT_INT32:
      return t->data<int32_t>()[0];
    case DT_INT64:
      return static_cast<double>(t->data<int64_t>()[0]);
    default:
      return std::nullopt;
  }
}

bool IsGraphOutput(const Graph& graph, TensorRef ref) {
  for (const GraphOutput& out : graph.outputs()) {
    if (out.tensor == ref) return true;
  }
  return false;
}

bool HasSoleReader(const Graph& graph, int id) {
  const Node& n = graph.node(id);
  return n.num_outputs() == 1 && graph.consumers(id, 0).size() == 1 &&
         graph.control_consumers(id).empty() && !IsGraphOutput(graph, {id, 0});
}

int SoleReader(const Graph& graph, int id) {
  return HasSoleReader(graph, id) ? graph.consumers(id, 0)[0].node : -1;
}

std::optional<TensorRef> OtherOperand(const Node& node, TensorRef ref) {
  if (node.num_inputs() != 2) return std::nullopt;
  const bool a = node.input(0) == ref, b = node.input(1) == ref;
  if (a == b) return std::nullopt;
  return a ? node.input(1) : node.input(0);
}

bool IsScalarNear(const Graph& graph, TensorRef ref, double want) {
  std::optional<double> v = ScalarConstOf(graph, ref);
  return v.has_value() && std::abs(*v - want) <= 1e-4 * std::abs(want);
}

bool IsFloatType(DataType dtype) {
  return dtype == DT_FLOAT || dtype == DT_DOUBLE || dtype == DT_FLOAT16 ||
         dtype == DT_BFLOAT16;
}

bool IsNondeterministicOp(const std::string& op) {
  return absl::StartsWith(op, "Random") || op == "Multinomial" ||
         op == "Bernoulli" || op == "TruncatedNormal";
}

bool HasSubgraphs(const Node& node) {
  for (const AttrDef& a : node.op_def().attrs) {
    if (a.type == AttrType::kGraph) return true;
  }
  return false;
}

absl::StatusOr<Tensor> ScalarConstTensor(DataType dtype, double value) {
  switch (dtype) {
    case DT_FLOAT:
      return Tensor::Scalar<float>(static_cast<float>(value));
    case DT_DOUBLE:
      return Tensor::Scalar<double>(value);
    case DT_FLOAT16:
      return Tensor::Scalar<half>(half(static_cast<float>(value)));
    case DT_BFLOAT16:
      return Tensor::Scalar<bfloat16>(bfloat16(static_cast<float>(value)));
    case DT_INT32:
      return Tensor::Scalar<int32_t>(static_cast<int32_t>(value));
    case DT_INT64:
      return Tensor::Scalar<int64_t>(static_cast<int64_t>(value));
    default:
      return absl::UnimplementedError(
          absl::StrCat("no scalar of ", DataTypeName(dtype)));
  }
}

NewNode ConstNode(std::string name, Tensor value, std::string device,
                  int source_line) {
  NewNode n;
  n.name = std::move(name);
  n.op = "Const";
  n.device = std::move(device);
  n.value = std::move(value);
  n.source_line = source_line;
  return n;
}

}  // namespace sluice
