// ONNX control flow: If, Loop and Scan. A subgraph attribute (GraphProto)
// is converted with the same op handlers into a GraphDef of its own, held
// by the sluice node as a graph attribute (graph/ops/control_flow_ops.cc).
// Subgraphs are closed: an outer value a subgraph reads (directly or from a
// subgraph nested in it) becomes an input of the control-flow node, after
// the op's own ("captures"), unless it is a constant, which the subgraph
// gets as a constant of its own (so shape computations in a body still
// fold). An If whose condition is known at import is replaced by the branch
// it takes, converted in place.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "graph/graph.h"
#include "graph/loader.h"
#include "graph/op_registry.h"
#include "graph/shape_fns.h"
#include "graph/shape_inference.h"
#include "onnx/import_context.h"
#include "onnx/onnx_tensor.h"

namespace sluice {
namespace {

// Adds to `out` the names `g` (or a subgraph of it) reads that are not
// bound in it: not in `bound`, and not its inputs, initializers or the
// outputs of its earlier nodes.
void CollectFree(const onnx::GraphProto& g,
                 absl::flat_hash_set<std::string> bound,
                 std::vector<std::string>* out,
                 absl::flat_hash_set<std::string>* seen) {
  for (const onnx::ValueInfoProto& in : g.input()) bound.insert(in.name());
  for (const onnx::TensorProto& init : g.initializer()) {
    bound.insert(init.name());
  }
  auto read = [&](const std::string& name) {
    if (!name.empty() && !bound.contains(name) && seen->insert(name).second) {
      out->push_back(name);
    }
  };
  for (const onnx::NodeProto& node : g.node()) {
    for (const std::string& in : node.input()) read(in);
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.has_g()) CollectFree(a.g(), bound, out, seen);
      for (const onnx::GraphProto& sub : a.graphs()) {
        CollectFree(sub, bound, out, seen);
      }
    }
    for (const std::string& o : node.output()) bound.insert(o);
  }
  for (const onnx::ValueInfoProto& o : g.output()) read(o.name());
}

std::vector<std::string> FreeNames(
    const std::vector<const onnx::GraphProto*>& graphs) {
  std::vector<std::string> out;
  absl::flat_hash_set<std::string> seen;
  for (const onnx::GraphProto* g : graphs) CollectFree(*g, {}, &out, &seen);
  return out;
}

const onnx::GraphProto* GraphAttr(const onnx::NodeProto& node,
                                  absl::string_view name) {
  const onnx::AttributeProto* a = FindAttr(node, name);
  return a != nullptr && a->has_g() ? &a->g() : nullptr;
}

// A formal input of a subgraph: what the control-flow op passes there.
struct Formal {
  DataType dtype = DT_INVALID;
  Shape shape = Shape::UnknownRank();
};

// `given` refined by the subgraph's declaration of the input: its element
// type must agree; its shape, when it has one, is taken.
absl::StatusOr<Formal> Declared(const onnx::ValueInfoProto& info,
                                Formal given) {
  if (!info.has_type()) return given;
  if (!info.type().has_tensor_type()) {
    return absl::UnimplementedError(absl::StrCat(
        "subgraph input '", info.name(), "' is not a tensor"));
  }
  const onnx::TypeProto::Tensor& tt = info.type().tensor_type();
  if (tt.elem_type() != 0) {
    ASSIGN_OR_RETURN(DataType dt, DataTypeFromOnnx(tt.elem_type()));
    if (given.dtype != DT_INVALID && dt != given.dtype) {
      return absl::InvalidArgumentError(absl::StrCat(
          "subgraph input '", info.name(), "' is declared ", DataTypeName(dt),
          " but receives ", DataTypeName(given.dtype)));
    }
    given.dtype = dt;
  }
  if (tt.has_shape()) {
    Shape s;
    for (const onnx::TensorShapeProto::Dimension& d : tt.shape().dim()) {
      s.AddDim(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value()
                                                       : kUnknownDim);
    }
    given.shape = s;
  }
  return given;
}

// Adds an Input node named after `hint` (made unique) to a subgraph and to
// its signature.
absl::StatusOr<ValuePtr> AddSubgraphInput(GraphEmitter& em,
                                          const std::string& hint,
                                          const Formal& f) {
  const std::string base = SanitizeNodeName(hint);
  for (int i = 0;; ++i) {
    std::string name = i == 0 ? base : absl::StrCat(base, "_", i);
    absl::StatusOr<ValuePtr> v = em.AddInput(name, f.dtype, f.shape);
    if (v.ok()) {
      TensorInfo* sig = em.def()->mutable_signature()->add_inputs();
      sig->set_name(name);
      return v;
    }
    if (v.status().code() != absl::StatusCode::kAlreadyExists) {
      return v.status();
    }
  }
}

// The outer values among `names` that a subgraph must receive as inputs:
// those known only at run time (constants are copied into the subgraph).
std::vector<std::string> RuntimeNames(const std::vector<std::string>& names,
                                      const ImportContext& outer) {
  std::vector<std::string> out;
  for (const std::string& name : names) {
    ValuePtr v = outer.Find(name);
    if (v != nullptr && !v->constant.has_value()) out.push_back(name);
  }
  return out;
}

// Converts subgraph `g` into a closed GraphDef. Its signature inputs are
// g's formal inputs (given by `formals`, one per input of g), then the
// outer values named by `captures`; outer constants among `free` are bound
// as constants of the subgraph.
absl::StatusOr<GraphDef> ImportSubgraph(const onnx::GraphProto& g,
                                        const std::vector<Formal>& formals,
                                        const std::vector<std::string>& free,
                                        const std::vector<std::string>& captures,
                                        ImportContext& outer) {
  if (static_cast<int>(formals.size()) != g.input_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("subgraph '", g.name(), "' has ", g.input_size(),
                     " inputs, the node passes ", formals.size()));
  }
  GraphDef def;
  GraphEmitter em(&def, outer.em().limits(), outer.em().fold_budget());
  ImportContext ctx(&em, &outer.options(), outer.opset(), outer.base_dir());
  for (int i = 0; i < g.input_size(); ++i) {
    ASSIGN_OR_RETURN(Formal f, Declared(g.input(i), formals[i]));
    if (f.dtype == DT_INVALID) {
      return absl::InvalidArgumentError(absl::StrCat(
          "subgraph input '", g.input(i).name(), "' has no element type"));
    }
    ASSIGN_OR_RETURN(ValuePtr v, AddSubgraphInput(em, g.input(i).name(), f));
    ctx.Bind(g.input(i).name(), v);
  }
  for (const std::string& name : captures) {
    ValuePtr outer_value = outer.Find(name);
    ASSIGN_OR_RETURN(
        ValuePtr v,
        AddSubgraphInput(em, name, {outer_value->dtype, outer_value->shape}));
    ctx.Bind(name, v);
  }
  for (const std::string& name : free) {
    ValuePtr v = outer.Find(name);
    if (v != nullptr && v->constant.has_value()) {
      ctx.Bind(name, em.AddConstant(*v->constant, v->name_hint));
    }
  }
  for (const onnx::TensorProto& init : g.initializer()) {
    ASSIGN_OR_RETURN(Tensor t, TensorFromOnnx(init, outer.base_dir()));
    ctx.Bind(init.name(), em.AddConstant(std::move(t), init.name()));
  }
  RETURN_IF_ERROR(ConvertNodes(g, ctx));
  absl::flat_hash_set<std::string> names;
  for (const onnx::ValueInfoProto& out : g.output()) {
    ValuePtr v = ctx.Find(out.name());
    if (v == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "subgraph output '", out.name(), "' is produced by no node"));
    }
    ASSIGN_OR_RETURN(std::string ref, em.Materialize(v));
    std::string name = out.name();
    for (int i = 1; !names.insert(name).second; ++i) {
      name = absl::StrCat(out.name(), "_", i);
    }
    TensorInfo* sig = def.mutable_signature()->add_outputs();
    sig->set_name(name);
    sig->set_tensor(ref);
  }
  return def;
}

// What a control-flow node is made of before it is written.
struct ControlNode {
  std::string op;
  std::vector<ValuePtr> inputs;  // fixed inputs, then the type list
  int fixed_inputs = 0;          // before the `inputs` type list
  AttrList attrs;                // complete, less Tin and Tout
  std::vector<std::pair<std::string, GraphDef>> subgraphs;
  // The subgraph whose outputs give Tout, and how many of its first
  // outputs are not outputs of the node (Loop's cond).
  int tout_from = 0;
  int tout_skip = 0;
};

// Validates the subgraphs, infers the node's outputs with its op's shape
// function and writes it into the outer GraphDef.
absl::StatusOr<std::vector<ValuePtr>> EmitControlNode(
    ImportContext& ctx, const onnx::NodeProto& node, ControlNode cn) {
  SubgraphMap graphs;
  for (const auto& [attr, def] : cn.subgraphs) {
    absl::StatusOr<std::unique_ptr<const Graph>> g =
        BuildGraph(def, GraphSource());
    if (!g.ok()) {
      return absl::Status(g.status().code(),
                          absl::StrCat("subgraph '", attr, "': ",
                                       g.status().message()));
    }
    graphs[attr] = *std::move(g);
  }
  std::vector<DataType> tin, tout;
  for (size_t i = cn.fixed_inputs; i < cn.inputs.size(); ++i) {
    tin.push_back(cn.inputs[i]->dtype);
  }
  const Graph& source = *graphs[cn.subgraphs[cn.tout_from].first];
  for (size_t i = cn.tout_skip; i < source.outputs().size(); ++i) {
    tout.push_back(source.outputs()[i].dtype);
  }
  cn.attrs["Tin"] = MakeTypeListAttr(tin);
  cn.attrs["Tout"] = MakeTypeListAttr(tout);
  for (auto& [attr, def] : cn.subgraphs) {
    cn.attrs[attr] = MakeGraphAttr(std::move(def));
  }
  const OpDef* op = OpRegistry::Global()->Find(cn.op);
  if (op == nullptr) return absl::InternalError("no op " + cn.op);
  std::vector<DataType> in_dtypes;
  std::vector<Shape> in_shapes;
  std::vector<const Tensor*> in_values;
  for (const ValuePtr& v : cn.inputs) {
    in_dtypes.push_back(v->dtype);
    in_shapes.push_back(v->shape);
    in_values.push_back(v->constant ? &*v->constant : nullptr);
  }
  AttrMap attrs(std::map<std::string, AttrValue, std::less<>>(
      cn.attrs.begin(), cn.attrs.end()));
  InferenceContext ic(&attrs, in_dtypes, in_shapes, in_values, tout);
  ic.set_subgraphs(&graphs);
  RETURN_IF_ERROR(op->shape_fn(ic));

  GraphEmitter& em = ctx.em();
  NodeDef nd;
  nd.set_name(em.UniqueName(ctx.Hint(node)));
  nd.set_op(cn.op);
  for (const ValuePtr& v : cn.inputs) {
    ASSIGN_OR_RETURN(std::string ref, em.Materialize(v));
    nd.add_input(ref);
  }
  for (auto& [key, value] : cn.attrs) (*nd.mutable_attr())[key] = value;
  std::vector<ValuePtr> outs;
  for (size_t i = 0; i < tout.size(); ++i) {
    auto v = std::make_shared<ValueData>();
    v->ref = i == 0 ? nd.name() : absl::StrCat(nd.name(), ":", i);
    v->dtype = tout[i];
    v->shape = ic.output_shapes()[i];
    outs.push_back(std::move(v));
  }
  *em.def()->add_node() = std::move(nd);
  return outs;
}

absl::Status SetOutputs(const onnx::NodeProto& node, ImportContext& ctx,
                        const std::vector<ValuePtr>& outs) {
  if (static_cast<int>(outs.size()) < node.output_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the node has ", node.output_size(),
                     " outputs, its subgraph gives ", outs.size()));
  }
  for (int i = 0; i < node.output_size(); ++i) {
    RETURN_IF_ERROR(ctx.SetOutput(node, i, outs[i]));
  }
  return absl::OkStatus();
}

// If with a condition known at import: the branch taken, converted into
// the outer graph (a child context sees the outer values it reads).
absl::Status InlineBranch(const onnx::NodeProto& node,
                          const onnx::GraphProto& branch, ImportContext& ctx) {
  ImportContext inner(&ctx.em(), &ctx.options(), ctx.opset(), ctx.base_dir());
  for (const std::string& name : FreeNames({&branch})) {
    if (ValuePtr v = ctx.Find(name)) inner.Bind(name, v);
  }
  for (const onnx::TensorProto& init : branch.initializer()) {
    ASSIGN_OR_RETURN(Tensor t, TensorFromOnnx(init, ctx.base_dir()));
    inner.Bind(init.name(), ctx.em().AddConstant(std::move(t), init.name()));
  }
  RETURN_IF_ERROR(ConvertNodes(branch, inner));
  std::vector<ValuePtr> outs;
  for (const onnx::ValueInfoProto& out : branch.output()) {
    ValuePtr v = inner.Find(out.name());
    if (v == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "branch output '", out.name(), "' is produced by no node"));
    }
    outs.push_back(v);
  }
  return SetOutputs(node, ctx, outs);
}

absl::Status ConvertIf(const onnx::NodeProto& node, ImportContext& ctx) {
  ASSIGN_OR_RETURN(ValuePtr cond, ctx.Input(node, 0));
  const onnx::GraphProto* then_g = GraphAttr(node, "then_branch");
  const onnx::GraphProto* else_g = GraphAttr(node, "else_branch");
  if (then_g == nullptr || else_g == nullptr) {
    return absl::InvalidArgumentError("needs then_branch and else_branch");
  }
  if (cond->constant.has_value()) {
    ASSIGN_OR_RETURN(std::vector<int64_t> c, ToInt64s(*cond->constant));
    if (c.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cond must have one element, got ", c.size()));
    }
    return InlineBranch(node, c[0] ? *then_g : *else_g, ctx);
  }
  std::vector<std::string> free = FreeNames({then_g, else_g});
  std::vector<std::string> captures = RuntimeNames(free, ctx);
  ControlNode cn;
  cn.op = "If";
  cn.inputs.push_back(cond);
  cn.fixed_inputs = 1;
  for (const std::string& name : captures) cn.inputs.push_back(ctx.Find(name));
  ASSIGN_OR_RETURN(GraphDef then_def,
                   ImportSubgraph(*then_g, {}, free, captures, ctx));
  ASSIGN_OR_RETURN(GraphDef else_def,
                   ImportSubgraph(*else_g, {}, free, captures, ctx));
  cn.subgraphs.emplace_back("then_branch", std::move(then_def));
  cn.subgraphs.emplace_back("else_branch", std::move(else_def));
  ASSIGN_OR_RETURN(std::vector<ValuePtr> outs,
                   EmitControlNode(ctx, node, std::move(cn)));
  return SetOutputs(node, ctx, outs);
}

absl::Status ConvertLoop(const onnx::NodeProto& node, ImportContext& ctx) {
  const onnx::GraphProto* body = GraphAttr(node, "body");
  if (body == nullptr) return absl::InvalidArgumentError("needs a body");
  ASSIGN_OR_RETURN(ValuePtr trips, ctx.OptionalInput(node, 0));
  ASSIGN_OR_RETURN(ValuePtr cond, ctx.OptionalInput(node, 1));
  if (trips == nullptr) {
    trips = ctx.em().AddConstant(
        Tensor::Scalar<int64_t>(std::numeric_limits<int64_t>::max()),
        ctx.Hint(node, "no_max_trip_count"));
  }
  const bool has_cond = cond != nullptr;
  if (!has_cond) {
    cond = ctx.em().AddConstant(Tensor::Scalar<bool>(true),
                                ctx.Hint(node, "no_cond"));
  }
  ControlNode cn;
  cn.op = "Loop";
  cn.inputs = {trips, cond};
  cn.fixed_inputs = 2;
  std::vector<Formal> formals = {{DT_INT64, Shape()}, {DT_BOOL, Shape()}};
  for (int i = 2; i < node.input_size(); ++i) {
    ASSIGN_OR_RETURN(ValuePtr v, ctx.Input(node, i));
    cn.inputs.push_back(v);
    // A loop-carried value may change shape between iterations: the body
    // sees its rank only, unless the body declares more.
    Shape s = Shape::UnknownRank();
    if (!v->shape.unknown_rank()) {
      s = Shape(std::vector<int64_t>(v->shape.rank(), kUnknownDim));
    }
    formals.push_back({v->dtype, s});
  }
  std::vector<std::string> free = FreeNames({body});
  std::vector<std::string> captures = RuntimeNames(free, ctx);
  for (const std::string& name : captures) cn.inputs.push_back(ctx.Find(name));
  ASSIGN_OR_RETURN(GraphDef body_def,
                   ImportSubgraph(*body, formals, free, captures, ctx));
  cn.subgraphs.emplace_back("body", std::move(body_def));
  cn.tout_skip = 1;
  cn.attrs["num_captures"] = MakeIntAttr(static_cast<int64_t>(captures.size()));
  cn.attrs["has_cond"] = MakeBoolAttr(has_cond);
  ASSIGN_OR_RETURN(std::vector<ValuePtr> outs,
                   EmitControlNode(ctx, node, std::move(cn)));
  return SetOutputs(node, ctx, outs);
}

absl::Status ConvertScan(const onnx::NodeProto& node, ImportContext& ctx) {
  const onnx::GraphProto* body = GraphAttr(node, "body");
  if (body == nullptr) return absl::InvalidArgumentError("needs a body");
  const int64_t m = AttrInt(node, "num_scan_inputs", 0);
  const int n = node.input_size() - static_cast<int>(m);
  if (m < 1 || n < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_scan_inputs = ", m, " with ", node.input_size(), " inputs"));
  }
  std::vector<int64_t> in_axes =
      AttrInts(node, "scan_input_axes").value_or(std::vector<int64_t>());
  if (!in_axes.empty() && static_cast<int64_t>(in_axes.size()) != m) {
    return absl::InvalidArgumentError(absl::StrCat(
        "scan_input_axes has ", in_axes.size(), " entries, expected ", m));
  }
  ControlNode cn;
  cn.op = "Scan";
  std::vector<Formal> formals;
  for (int i = 0; i < node.input_size(); ++i) {
    ASSIGN_OR_RETURN(ValuePtr v, ctx.Input(node, i));
    cn.inputs.push_back(v);
    Formal f{v->dtype, v->shape};
    if (i >= n && !v->shape.unknown_rank()) {
      // One slice of a scan input: its scan axis removed.
      int64_t axis = in_axes.empty() ? 0 : in_axes[i - n];
      ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, v->shape.rank()));
      f.shape = Shape();
      for (int d = 0; d < v->shape.rank(); ++d) {
        if (d != a) f.shape.AddDim(v->shape.dim(d));
      }
    }
    formals.push_back(f);
  }
  std::vector<std::string> free = FreeNames({body});
  std::vector<std::string> captures = RuntimeNames(free, ctx);
  for (const std::string& name : captures) cn.inputs.push_back(ctx.Find(name));
  ASSIGN_OR_RETURN(GraphDef body_def,
                   ImportSubgraph(*body, formals, free, captures, ctx));
  cn.subgraphs.emplace_back("body", std::move(body_def));
  cn.attrs["num_scan_inputs"] = MakeIntAttr(m);
  cn.attrs["num_captures"] = MakeIntAttr(static_cast<int64_t>(captures.size()));
  for (const char* list : {"scan_input_axes", "scan_input_directions",
                           "scan_output_axes", "scan_output_directions"}) {
    cn.attrs[list] = MakeIntListAttr(
        AttrInts(node, list).value_or(std::vector<int64_t>()));
  }
  ASSIGN_OR_RETURN(std::vector<ValuePtr> outs,
                   EmitControlNode(ctx, node, std::move(cn)));
  return SetOutputs(node, ctx, outs);
}

}  // namespace

void AddControlFlowOps(OnnxOpTable* table) {
  (*table)["If"] = {ConvertIf};
  (*table)["Loop"] = {ConvertLoop};
  (*table)["Scan"] = {ConvertScan};
}

}  // namespace sluice
