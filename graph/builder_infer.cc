// GraphBuilder, part 2: dtype and shape inference in topological order, the
// signature, and assembling the immutable Graph.
#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/tensor_proto.h"
#include "graph/builder.h"
#include "graph/shape_inference.h"

namespace sluice {
namespace {

// An error when a (partial) shape claims more than kMaxElements elements.
absl::Status CheckShapeSize(const Shape& s) {
  if (s.unknown_rank()) return absl::OkStatus();
  __int128 product = 1;
  for (int64_t d : s.dims()) {
    if (d < kUnknownDim) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", s.DebugString(), " has a negative dimension"));
    }
    if (d >= 0) product *= d;
    if (product > kMaxElements) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape ", s.DebugString(), " has more than 2^48 elements"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool GraphBuilder::InferTypes(int id, std::vector<DataType>* input_dtypes) {
  NodeState& n = nodes_[id];
  const OpDef& op = *n.op;
  // Which argument, and which element of it, each data input is.
  std::vector<const ArgDef*> arg_of;
  std::vector<std::string> label_of;
  std::vector<DataType> listed_type;  // per input, from a type list
  for (const ArgDef& arg : op.inputs) {
    int count = 1;
    std::vector<DataType> types;
    if (!arg.number_attr.empty()) {
      count = static_cast<int>(n.attrs[arg.number_attr].i());
    } else if (!arg.type_list_attr.empty()) {
      for (int t : n.attrs[arg.type_list_attr].list().type()) {
        types.push_back(static_cast<DataType>(t));
      }
      count = static_cast<int>(types.size());
    }
    for (int k = 0; k < count; ++k) {
      arg_of.push_back(&arg);
      listed_type.push_back(types.empty() ? DT_INVALID : types[k]);
      label_of.push_back(arg.number_attr.empty() && arg.type_list_attr.empty()
                             ? absl::StrCat("'", arg.name, "'")
                             : absl::StrCat("'", arg.name, "[", k, "]'"));
    }
  }
  auto describe = [&](int i) {
    return absl::StrCat("input ", i, " ", label_of[i], " ('", n.def->input(i),
                        "') is ", DataTypeName((*input_dtypes)[i]));
  };
  bool ok = true;
  for (int i = 0; i < static_cast<int>(arg_of.size()); ++i) {
    const ArgDef& arg = *arg_of[i];
    if (arg.fixed_type != DT_INVALID && (*input_dtypes)[i] != arg.fixed_type) {
      NodeError(id, absl::StrCat(describe(i), ", expected ",
                                 DataTypeName(arg.fixed_type)));
      ok = false;
    }
    if (listed_type[i] != DT_INVALID && (*input_dtypes)[i] != listed_type[i]) {
      NodeError(id, absl::StrCat(describe(i), " but ", arg.type_list_attr,
                                 " lists ", DataTypeName(listed_type[i])));
      ok = false;
    }
  }
  for (const AttrDef& a : op.attrs) {
    if (a.type != AttrType::kType) continue;
    std::vector<int> bound;
    for (int i = 0; i < static_cast<int>(arg_of.size()); ++i) {
      if (arg_of[i]->type_attr == a.name) bound.push_back(i);
    }
    if (bound.empty()) continue;
    auto it = n.attrs.find(a.name);
    if (it != n.attrs.end()) {
      for (int i : bound) {
        if ((*input_dtypes)[i] != it->second.type()) {
          NodeError(id, absl::StrCat(describe(i), " but ", a.name, "=",
                                     DataTypeName(it->second.type())));
          ok = false;
        }
      }
      continue;
    }
    DataType t = (*input_dtypes)[bound[0]];
    bool agree = true;
    for (int i : bound) {
      if ((*input_dtypes)[i] != t) {
        NodeError(id, absl::StrCat("inputs disagree on ", a.name, ": ",
                                   describe(bound[0]), ", ", describe(i)));
        agree = ok = false;
        break;
      }
    }
    if (!agree) continue;
    const std::vector<DataType>& allowed =
        a.allowed_types.empty() ? kAllTypes : a.allowed_types;
    if (std::find(allowed.begin(), allowed.end(), t) == allowed.end()) {
      std::vector<std::string> names;
      for (DataType d : allowed) names.push_back(DataTypeName(d));
      NodeError(id, absl::StrCat(describe(bound[0]), ", so ", a.name, "=",
                                 DataTypeName(t), ", which ", op.name,
                                 " does not allow (allowed: ",
                                 absl::StrJoin(names, ", "), ")"));
      ok = false;
      continue;
    }
    n.attrs[a.name] = MakeTypeAttr(t);
  }
  return ok;
}

void GraphBuilder::Infer(int id) {
  NodeState& n = nodes_[id];
  if (!n.ok || n.op == nullptr || n.num_outputs < 0) return;
  std::vector<DataType> input_dtypes;
  std::vector<Shape> input_shapes;
  std::vector<const Tensor*> input_values;
  for (const TensorRef& r : n.inputs) {
    const NodeState& p = nodes_[r.node];
    if (!p.inferred) return;  // an upstream error was reported already
    input_dtypes.push_back(p.output_dtypes[r.port]);
    input_shapes.push_back(p.output_shapes[r.port]);
    input_values.push_back(p.value.has_value() && r.port == 0 ? &*p.value
                                                               : nullptr);
  }
  if (!InferTypes(id, &input_dtypes)) return;
  std::vector<DataType> output_dtypes;
  for (const ArgDef& arg : n.op->outputs) {
    if (!arg.type_list_attr.empty()) {
      for (int t : n.attrs[arg.type_list_attr].list().type()) {
        output_dtypes.push_back(static_cast<DataType>(t));
      }
      continue;
    }
    DataType t = arg.fixed_type;
    if (t == DT_INVALID) {
      auto it = n.attrs.find(arg.type_attr);
      if (it == n.attrs.end()) return;  // reported as missing already
      t = it->second.type();
    }
    int count = arg.number_attr.empty()
                    ? 1
                    : static_cast<int>(n.attrs[arg.number_attr].i());
    output_dtypes.insert(output_dtypes.end(), count, t);
  }
  AttrMap attrs(n.attrs);
  InferenceContext ctx(&attrs, std::move(input_dtypes),
                       std::move(input_shapes), std::move(input_values),
                       output_dtypes);
  ctx.set_subgraphs(&n.subgraphs);
  if (std::any_of(n.inputs.begin(), n.inputs.end(), [&](const TensorRef& r) {
        return nodes_[r.node].described;
      })) {
    // A shape function that reads a described splat gets it made.
    ctx.set_value_maker([this, &n](int i) -> std::optional<Tensor> {
      const NodeState& p = nodes_[n.inputs[i].node];
      if (!p.described) return std::nullopt;
      absl::StatusOr<Tensor> t =
          TensorFromProto(p.attrs.at("value").tensor());
      if (!t.ok()) return std::nullopt;  // SplatValue checked it
      return *std::move(t);
    });
  }
  absl::Status status = n.op->shape_fn(ctx);
  if (!status.ok()) {
    NodeError(id, status);
    return;
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    absl::Status size = CheckShapeSize(ctx.output_shapes()[i]);
    if (!size.ok()) {
      NodeError(id, absl::StrCat("output ", i, ": ", size.message()));
      return;
    }
  }
  n.output_dtypes = std::move(output_dtypes);
  n.output_shapes = ctx.output_shapes();
  n.inferred = true;
}

void GraphBuilder::ResolveSignature() {
  const SignatureDef& sig = def_.signature();
  auto sig_error = [&](const char* kind, const TensorInfo& ti,
                       const std::string& msg) {
    Error(absl::StatusCode::kInvalidArgument,
          absl::StrCat("signature ", kind, " '", ti.name(), "': ", msg));
  };
  // Checks a TensorInfo's optional dtype and shape against inference.
  auto check_info = [&](const char* kind, const TensorInfo& ti, DataType dtype,
                        const Shape& shape) {
    if (ti.dtype() != DT_INVALID && ti.dtype() != dtype) {
      sig_error(kind, ti, absl::StrCat("dtype ", DataTypeName(ti.dtype()),
                                       " does not match the inferred ",
                                       DataTypeName(dtype)));
    }
    if (!ti.has_shape()) return;
    absl::StatusOr<Shape> s = ShapeFromProto(ti.shape());
    if (!s.ok()) {
      sig_error(kind, ti, std::string(s.status().message()));
    } else if (!s->IsCompatibleWith(shape)) {
      sig_error(kind, ti, absl::StrCat("shape ", s->DebugString(),
                                       " does not match the inferred ",
                                       shape.DebugString()));
    }
  };

  // Inputs.
  absl::flat_hash_set<int> listed;
  absl::flat_hash_set<std::string> names;
  for (const TensorInfo& ti : sig.inputs()) {
    if (ti.name().empty()) {
      sig_error("input", ti, "has no name");
      continue;
    }
    if (!names.insert(ti.name()).second) {
      sig_error("input", ti, "is listed twice");
      continue;
    }
    auto it = index_.find(ti.name());
    if (it == index_.end()) {
      sig_error("input", ti, "names no node");
      continue;
    }
    const NodeState& n = nodes_[it->second];
    if (n.def->op() != "Input") {
      sig_error("input", ti, absl::StrCat("names ", NodeLabel(it->second),
                                          ", which is not an Input node"));
      continue;
    }
    listed.insert(it->second);
    if (!n.inferred) continue;
    check_info("input", ti, n.output_dtypes[0], n.output_shapes[0]);
    inputs_.push_back(GraphInput{ti.name(), it->second, n.output_dtypes[0],
                                 n.output_shapes[0]});
  }
  for (int id = 0; id < static_cast<int>(nodes_.size()); ++id) {
    const NodeState& n = nodes_[id];
    if (n.duplicate || n.def->op() != "Input") continue;
    if (sig.inputs_size() == 0) {
      if (n.inferred) {
        inputs_.push_back(GraphInput{n.def->name(), id, n.output_dtypes[0],
                                     n.output_shapes[0]});
      }
    } else if (!listed.contains(id)) {
      NodeError(id, "Input node is not listed in signature.inputs");
    }
  }

  // Outputs.
  names.clear();
  for (const TensorInfo& ti : sig.outputs()) {
    if (ti.name().empty()) {
      sig_error("output", ti, "has no name");
      continue;
    }
    if (!names.insert(ti.name()).second) {
      sig_error("output", ti, "is listed twice");
      continue;
    }
    const std::string& text = ti.tensor().empty() ? ti.name() : ti.tensor();
    absl::StatusOr<ParsedInput> parsed = ParseInputString(text);
    if (!parsed.ok()) {
      sig_error("output", ti, std::string(parsed.status().message()));
      continue;
    }
    if (parsed->control) {
      sig_error("output", ti, absl::StrCat("tensor '", text,
                                           "' is a control reference"));
      continue;
    }
    auto it = index_.find(parsed->node);
    if (it == index_.end()) {
      sig_error("output", ti, absl::StrCat("tensor '", text,
                                           "' names no node"));
      continue;
    }
    const NodeState& n = nodes_[it->second];
    if (n.num_outputs >= 0 && parsed->port >= n.num_outputs) {
      sig_error("output", ti,
                absl::StrCat("tensor '", text, "' asks for output ",
                             parsed->port, " of ", NodeLabel(it->second),
                             ", which has ", n.num_outputs));
      continue;
    }
    if (!n.inferred) continue;
    DataType dtype = n.output_dtypes[parsed->port];
    const Shape& shape = n.output_shapes[parsed->port];
    check_info("output", ti, dtype, shape);
    outputs_.push_back(GraphOutput{ti.name(), TensorRef{it->second,
                                                        parsed->port},
                                   dtype, shape});
  }
  if (sig.outputs_size() > 0) return;
  for (int id = 0; id < static_cast<int>(nodes_.size()); ++id) {
    const NodeState& n = nodes_[id];
    if (n.duplicate || !n.inferred || !n.successors.empty()) continue;
    for (int port = 0; port < n.num_outputs; ++port) {
      std::string name = port == 0 ? n.def->name()
                                   : absl::StrCat(n.def->name(), ":", port);
      outputs_.push_back(GraphOutput{name, TensorRef{id, port},
                                     n.output_dtypes[port],
                                     n.output_shapes[port]});
    }
  }
}

std::unique_ptr<Graph> GraphBuilder::Assemble() {
  auto g = std::make_unique<Graph>();
  const int count = static_cast<int>(nodes_.size());
  g->nodes_.resize(count);
  g->consumers_.resize(count);
  g->control_consumers_.resize(count);
  // The def node by node, each with the resolved attributes rather than the
  // given ones: a Const's value there holds no bytes (ResolveConst), and
  // copying def_ whole would copy them.
  g->def_.set_format_version(def_.format_version());
  *g->def_.mutable_signature() = def_.signature();
  g->def_.mutable_node()->Reserve(count);
  for (int id = 0; id < count; ++id) {
    NodeState& s = nodes_[id];
    g->consumers_[id].resize(s.num_outputs);
    const NodeDef& given = def_.node(id);
    NodeDef* nd = g->def_.add_node();
    nd->set_name(given.name());
    nd->set_op(given.op());
    *nd->mutable_input() = given.input();
    nd->set_device(given.device());
    auto* attr_proto = nd->mutable_attr();
    for (const auto& [name, value] : s.attrs) (*attr_proto)[name] = value;
  }
  for (int id = 0; id < count; ++id) {
    NodeState& s = nodes_[id];
    Node& node = g->nodes_[id];
    node.id_ = id;
    node.name_ = s.def->name();
    node.op_def_ = s.op;
    node.requested_device_ = s.def->device();
    node.attrs_ = AttrMap(std::move(s.attrs));
    node.inputs_ = s.inputs;
    node.control_inputs_ = s.control_inputs;
    node.output_dtypes_ = std::move(s.output_dtypes);
    node.output_shapes_ = std::move(s.output_shapes);
    node.const_value_ = std::move(s.value);
    node.subgraphs_ = std::move(s.subgraphs);
    node.source_line_ = s.line;
    for (int k = 0; k < static_cast<int>(s.inputs.size()); ++k) {
      const TensorRef& r = s.inputs[k];
      g->consumers_[r.node][r.port].push_back(Consumer{id, k});
    }
    for (int c : s.control_inputs) g->control_consumers_[c].push_back(id);
  }
  for (Node& node : g->nodes_) {
    for (const TensorRef& r : node.inputs_) {
      const Node& src = g->nodes_[r.node];
      node.input_dtypes_.push_back(src.output_dtypes_[r.port]);
      node.input_shapes_.push_back(src.output_shapes_[r.port]);
    }
  }
  g->index_ = std::move(index_);
  g->topo_order_ = std::move(topo_order_);
  g->inputs_ = std::move(inputs_);
  g->outputs_ = std::move(outputs_);
  g->base_dir_ = source_.base_dir;
  return g;
}

}  // namespace sluice
