#include "python/src/graph_builder_bindings.h"

#include <Python.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "google/protobuf/text_format.h"
#include "graph/builder.h"
#include "graph/graph.h"
#include "graph/loader.h"
#include "graph/op_def.h"
#include "graph/op_registry.h"
#include "nanobind/stl/string.h"
#include "nanobind/stl/tuple.h"
#include "nanobind/stl/vector.h"
#include "python/src/status_error.h"
#include "sluice/dtype.h"
#include "sluice/shape.h"

namespace nb = nanobind;

namespace sluice::python {
namespace {

// A NumPy array's bytes on their way into a TensorProto (`_TensorValue`,
// made by sluice/graph_builder.py; ml_dtypes arrays arrive as their raw
// unsigned integers with the sluice dtype name beside them).
struct TensorValue {
  DataType dtype = DT_INVALID;
  std::vector<int64_t> shape;
  std::string data;  // row-major, one element per DataTypeSize bytes
};

// (dtype name, dims with -1 unknown, rank or -1 for an unknown rank): one
// node output as Python sees it.
using OutputSpec = std::tuple<std::string, std::vector<int64_t>, int>;

struct OutputInfo {
  DataType dtype = DT_INVALID;
  Shape shape;
};

class PyGraphDef;

// --- Python values to AttrValues ------------------------------------------

bool IsBool(nb::handle h) { return nb::isinstance<nb::bool_>(h); }
bool IsSeq(nb::handle h) {
  return nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h);
}

std::optional<int64_t> AsInt(nb::handle h) {
  if (IsBool(h) || !nb::isinstance<nb::int_>(h)) return std::nullopt;
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
  if (overflow != 0 || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    return std::nullopt;
  }
  return static_cast<int64_t>(v);
}

std::optional<double> AsFloat(nb::handle h) {
  if (nb::isinstance<nb::float_>(h)) return nb::cast<double>(h);
  if (std::optional<int64_t> i = AsInt(h)) return static_cast<double>(*i);
  return std::nullopt;
}

std::string PyTypeName(nb::handle h) {
  return nb::cast<std::string>(nb::str(h.type().attr("__name__")));
}

const GraphDef* AsGraph(nb::handle h);  // defined after PyGraphDef

// Sets `out` to `v` as a value of `type` (a scalar kind); false when `v`
// is not one.
bool SetScalar(nb::handle v, AttrType type, AttrValue* out) {
  switch (type) {
    case AttrType::kInt:
      if (std::optional<int64_t> i = AsInt(v)) {
        out->set_i(*i);
        return true;
      }
      return false;
    case AttrType::kFloat:
      if (std::optional<double> f = AsFloat(v)) {
        out->set_f(static_cast<float>(*f));
        return true;
      }
      return false;
    case AttrType::kString:
      if (!nb::isinstance<nb::str>(v)) return false;
      out->set_s(nb::cast<std::string>(v));
      return true;
    case AttrType::kBool:
      if (!IsBool(v)) return false;
      out->set_b(nb::cast<bool>(v));
      return true;
    case AttrType::kType: {
      if (!nb::isinstance<nb::str>(v)) return false;
      absl::StatusOr<DataType> t = ParseDataType(nb::cast<std::string>(v));
      if (!t.ok()) return false;
      out->set_type(*t);
      return true;
    }
    case AttrType::kShape: {
      TensorShapeProto* shape = out->mutable_shape();
      if (v.is_none()) {
        shape->set_unknown_rank(true);
        return true;
      }
      if (!IsSeq(v)) return false;
      for (nb::handle d : v) {
        std::optional<int64_t> i = AsInt(d);
        if (!i && !d.is_none() && !nb::isinstance<nb::str>(d)) return false;
        shape->add_dim(i ? *i : -1);  // None or a symbolic name: unknown
      }
      return true;
    }
    case AttrType::kTensor: {
      if (!nb::isinstance<TensorValue>(v)) return false;
      const TensorValue& t = nb::cast<const TensorValue&>(v);
      TensorProto* proto = out->mutable_tensor();
      proto->set_dtype(t.dtype);
      for (int64_t d : t.shape) proto->mutable_shape()->add_dim(d);
      proto->set_content(t.data);
      return true;
    }
    case AttrType::kGraph:
      if (const GraphDef* g = AsGraph(v)) {
        *out->mutable_graph() = *g;
        return true;
      }
      return false;
    default:
      return false;
  }
}

std::optional<AttrType> ElementType(AttrType list) {
  switch (list) {
    case AttrType::kListInt: return AttrType::kInt;
    case AttrType::kListFloat: return AttrType::kFloat;
    case AttrType::kListString: return AttrType::kString;
    case AttrType::kListType: return AttrType::kType;
    case AttrType::kListShape: return AttrType::kShape;
    default: return std::nullopt;
  }
}

// Sets `out` to `v` as a value of `type`; false when `v` is not one.
bool SetValue(nb::handle v, AttrType type, AttrValue* out) {
  std::optional<AttrType> element = ElementType(type);
  if (!element) return SetScalar(v, type, out);
  if (!IsSeq(v)) return false;
  AttrValue::ListValue* list = out->mutable_list();
  for (nb::handle item : v) {
    AttrValue e;
    if (!SetScalar(item, *element, &e)) return false;
    switch (*element) {
      case AttrType::kInt: list->add_i(e.i()); break;
      case AttrType::kFloat: list->add_f(e.f()); break;
      case AttrType::kString: list->add_s(e.s()); break;
      case AttrType::kType: list->add_type(e.type()); break;
      default: *list->add_shape() = e.shape(); break;
    }
  }
  return true;
}

// The kind a value has by itself, for attributes the schema does not
// declare (or does not fit): what the graph builder then reports on.
std::optional<AttrType> NaturalType(nb::handle v) {
  if (IsBool(v)) return AttrType::kBool;
  if (AsInt(v)) return AttrType::kInt;
  if (nb::isinstance<nb::float_>(v)) return AttrType::kFloat;
  if (nb::isinstance<nb::str>(v)) return AttrType::kString;
  if (nb::isinstance<TensorValue>(v)) return AttrType::kTensor;
  if (AsGraph(v) != nullptr) return AttrType::kGraph;
  if (!IsSeq(v)) return std::nullopt;
  AttrType list = AttrType::kListInt;  // empty: fits every list type
  for (nb::handle item : v) {
    if (IsBool(item)) return std::nullopt;  // no list(bool) attributes
    if (nb::isinstance<nb::float_>(item)) list = AttrType::kListFloat;
    else if (nb::isinstance<nb::str>(item)) return AttrType::kListString;
    else if (IsSeq(item) || item.is_none()) return AttrType::kListShape;
  }
  return list;
}

absl::StatusOr<AttrValue> ToAttrValue(nb::handle v, const AttrDef* def) {
  AttrValue out;
  if (def != nullptr) {
    if (def->type == AttrType::kType && nb::isinstance<nb::str>(v)) {
      ASSIGN_OR_RETURN(DataType t, ParseDataType(nb::cast<std::string>(v)));
      out.set_type(t);
      return out;
    }
    if (SetValue(v, def->type, &out)) return out;
    out.Clear();
  }
  std::optional<AttrType> natural = NaturalType(v);
  if (natural && SetValue(v, *natural, &out)) return out;
  return absl::InvalidArgumentError(absl::StrCat(
      "a Python ", PyTypeName(v),
      " is not an attribute value (int, float, bool, str, a dtype, a shape, "
      "a NumPy array, a GraphBuilder or a list of these)"));
}

// --- Const values as text -------------------------------------------------

template <typename T, typename Add>
bool ContentToList(const std::string& content, Add add) {
  if (content.empty() || content.size() % sizeof(T) != 0) return false;
  for (size_t at = 0; at < content.size(); at += sizeof(T)) {
    T value;
    std::memcpy(&value, content.data() + at, sizeof(T));
    add(value);
  }
  return true;
}

// Moves `content` into float_val / double_val / int_val where the dtype has
// an exact list form, which a .pbtxt reads far better than escaped bytes.
void ListContent(TensorProto* t) {
  const std::string& c = t->content();
  auto f = [t](auto v) { t->add_float_val(v); };
  auto d = [t](auto v) { t->add_double_val(v); };
  auto i = [t](auto v) { t->add_int_val(static_cast<int64_t>(v)); };
  bool listed = false;
  switch (t->dtype()) {
    case DT_FLOAT: listed = ContentToList<float>(c, f); break;
    case DT_DOUBLE: listed = ContentToList<double>(c, d); break;
    case DT_INT8: listed = ContentToList<int8_t>(c, i); break;
    case DT_INT16: listed = ContentToList<int16_t>(c, i); break;
    case DT_INT32: listed = ContentToList<int32_t>(c, i); break;
    case DT_INT64: listed = ContentToList<int64_t>(c, i); break;
    case DT_UINT8: listed = ContentToList<uint8_t>(c, i); break;
    case DT_UINT16: listed = ContentToList<uint16_t>(c, i); break;
    case DT_UINT32: listed = ContentToList<uint32_t>(c, i); break;
    case DT_BOOL: listed = ContentToList<uint8_t>(c, i); break;
    default: break;
  }
  if (listed) t->clear_content();
}

void ListConstValues(GraphDef* def) {
  for (NodeDef& n : *def->mutable_node()) {
    for (auto& [key, value] : *n.mutable_attr()) {
      if (value.has_graph()) ListConstValues(value.mutable_graph());
      if (n.op() == "Const" && key == "value" && value.has_tensor()) {
        ListContent(value.mutable_tensor());
      }
    }
  }
}

// --- The builder ----------------------------------------------------------

class PyGraphDef {
 public:
  PyGraphDef() { def_.set_format_version(kGraphFormatVersion); }

  // Converts and checks one node, then appends it; returns its outputs.
  // Throws (INVALID_ARGUMENT, naming the node) and adds nothing when the
  // graph builder rejects it.
  std::vector<OutputSpec> AddNode(const std::string& name,
                                  const std::string& op,
                                  const std::vector<std::string>& inputs,
                                  nb::dict attrs, const std::string& device) {
    NodeDef node;
    node.set_name(name);
    node.set_op(op);
    for (const std::string& in : inputs) node.add_input(in);
    node.set_device(device);
    const OpDef* op_def = OpRegistry::Global()->Find(op);
    for (auto [key, value] : attrs) {
      const std::string attr = nb::cast<std::string>(key);
      absl::StatusOr<AttrValue> v = ToAttrValue(
          value, op_def == nullptr ? nullptr : op_def->FindAttr(attr));
      if (!v.ok()) {
        ThrowIfError(absl::Status(
            v.status().code(), absl::StrCat("node '", name, "' (", op,
                                            "): attribute '", attr, "': ",
                                            v.status().message())));
      }
      (*node.mutable_attr())[attr] = *std::move(v);
    }
    std::vector<OutputInfo> outputs = ValueOrThrow(Check(node));
    index_.emplace(name, def_.node_size());
    outputs_.push_back(outputs);
    if (op == "Input") def_.mutable_signature()->add_inputs()->set_name(name);
    *def_.add_node() = std::move(node);
    std::vector<OutputSpec> specs;
    for (const OutputInfo& o : outputs) {
      std::vector<int64_t> dims(o.shape.dims().begin(), o.shape.dims().end());
      specs.emplace_back(DataTypeName(o.dtype), std::move(dims),
                         o.shape.unknown_rank() ? -1 : o.shape.rank());
    }
    return specs;
  }

  // Names the symbolic dimensions of Input node `input` in the signature.
  void SetDimNames(const std::string& input,
                   const std::vector<std::string>& names) {
    for (TensorInfo& info : *def_.mutable_signature()->mutable_inputs()) {
      if (info.name() != input) continue;
      info.clear_dim_names();
      for (const std::string& n : names) info.add_dim_names(n);
    }
  }

  // A signature output; checked with the whole graph (Validate).
  void AddOutput(const std::string& name, const std::string& tensor) {
    TensorInfo* info = def_.mutable_signature()->add_outputs();
    info->set_name(name);
    info->set_tensor(tensor);
  }

  // The graph as a model file is loaded: every error, one per line.
  absl::Status Validate() const {
    return BuildGraph(def_, GraphSource{}, ConstValues::kDescribeSplats)
        .status();
  }

  // Validates, then a binary GraphDef, or its text with Const values listed.
  nb::bytes Serialize(bool text) const {
    ThrowIfError(Validate());
    std::string data;
    if (text) {
      GraphDef copy = def_;
      ListConstValues(&copy);
      google::protobuf::TextFormat::Printer printer;
      printer.SetUseShortRepeatedPrimitives(true);
      if (!printer.PrintToString(copy, &data)) {
        ThrowIfError(absl::InternalError("cannot print the GraphDef as text"));
      }
    } else if (!def_.SerializeToString(&data)) {
      ThrowIfError(absl::InvalidArgumentError(
          "cannot serialize the GraphDef (over 2 GiB? keep large weights in "
          "a weights file)"));
    }
    return nb::bytes(data.data(), data.size());
  }

  // Removes the nodes added after the first `keep` (Consts made for a node
  // that was then rejected), with their signature inputs.
  void Truncate(int keep) {
    while (def_.node_size() > std::max(keep, 0)) {
      const NodeDef& last = def_.node(def_.node_size() - 1);
      index_.erase(last.name());
      outputs_.pop_back();
      auto* inputs = def_.mutable_signature()->mutable_inputs();
      if (last.op() == "Input" && !inputs->empty() &&
          inputs->Get(inputs->size() - 1).name() == last.name()) {
        inputs->RemoveLast();
      }
      def_.mutable_node()->RemoveLast();
    }
  }

  int num_nodes() const { return def_.node_size(); }
  const GraphDef& def() const { return def_; }

 private:
  // The node's outputs, as sluice's graph builder infers them. Fast path: the
  // node alone with stand-ins for what it reads (Input nodes of the
  // producers' dtypes and shapes; Const producers themselves, whose values
  // some shape functions read). When that fails, or cannot be made, the
  // whole graph with the node decides, so the message is the loader's own,
  // with the real names.
  absl::StatusOr<std::vector<OutputInfo>> Check(const NodeDef& node) const {
    if (std::optional<GraphDef> alone = Neighbourhood(node)) {
      absl::StatusOr<std::unique_ptr<const Graph>> g =
          BuildGraph(*alone, GraphSource{}, ConstValues::kDescribeSplats);
      if (g.ok()) return OutputsOf(**g, node.name());
    }
    GraphDef whole;
    *whole.mutable_node() = def_.node();
    *whole.add_node() = node;
    ASSIGN_OR_RETURN(std::unique_ptr<const Graph> g,
                     BuildGraph(whole, GraphSource{},
                                ConstValues::kDescribeSplats));
    return OutputsOf(*g, node.name());
  }

  // `node` with stand-ins for its producers; nullopt when an input does not
  // name an existing output (or the name is taken): the whole graph says so.
  std::optional<GraphDef> Neighbourhood(const NodeDef& node) const {
    if (index_.contains(node.name())) return std::nullopt;
    GraphDef alone;
    NodeDef copy = node;
    absl::flat_hash_map<std::string, std::string> stand_in;  // input -> node
    for (std::string& in : *copy.mutable_input()) {
      absl::StatusOr<ParsedInput> p = ParseInputString(in);
      if (!p.ok()) return std::nullopt;
      auto it = index_.find(p->node);
      if (it == index_.end()) return std::nullopt;
      const std::vector<OutputInfo>& outs = outputs_[it->second];
      if (!p->control && p->port >= static_cast<int>(outs.size())) {
        return std::nullopt;
      }
      std::string name = absl::StrCat("__sluice_stand_in_", stand_in.size());
      auto [s, inserted] = stand_in.emplace(in, name);
      if (inserted) {
        const NodeDef& producer = def_.node(it->second);
        NodeDef* stub = alone.add_node();
        if (!p->control && producer.op() == "Const") {
          *stub = producer;
        } else {
          const OutputInfo o = p->control ? OutputInfo{DT_FLOAT, Shape{}}
                                          : outs[p->port];
          stub->set_op("Input");
          (*stub->mutable_attr())["dtype"].set_type(o.dtype);
          *(*stub->mutable_attr())["shape"].mutable_shape() =
              ShapeToProto(o.shape);
        }
        stub->set_name(name);
      }
      in = p->control ? absl::StrCat("^", s->second) : s->second;
    }
    *alone.add_node() = std::move(copy);
    return alone;
  }

  static absl::StatusOr<std::vector<OutputInfo>> OutputsOf(
      const Graph& g, const std::string& name) {
    const Node* n = g.FindNode(name);
    if (n == nullptr) {
      return absl::InternalError(absl::StrCat("node '", name, "' was lost"));
    }
    std::vector<OutputInfo> out;
    for (int i = 0; i < n->num_outputs(); ++i) {
      out.push_back(OutputInfo{n->output_dtype(i), n->output_shape(i)});
    }
    return out;
  }

  GraphDef def_;
  absl::flat_hash_map<std::string, int> index_;   // node name -> position
  std::vector<std::vector<OutputInfo>> outputs_;  // per node, as inferred
};

const GraphDef* AsGraph(nb::handle h) {
  if (!nb::isinstance<PyGraphDef>(h)) return nullptr;
  return &nb::cast<const PyGraphDef&>(h).def();
}

}  // namespace

void BindGraphBuilder(nb::module_& m) {
  nb::class_<TensorValue>(m, "_TensorValue")
      .def("__init__",
           [](TensorValue* self, const std::string& dtype,
              std::vector<int64_t> shape, nb::bytes data) {
             DataType t = ValueOrThrow(ParseDataType(dtype));
             new (self) TensorValue{t, std::move(shape),
                                    std::string(data.c_str(), data.size())};
           },
           nb::arg("dtype"), nb::arg("shape"), nb::arg("data"));
  nb::class_<PyGraphDef>(m, "_GraphDef")
      .def(nb::init<>())
      .def("add_node", &PyGraphDef::AddNode, nb::arg("name"), nb::arg("op"),
           nb::arg("inputs"), nb::arg("attrs"), nb::arg("device"),
           "Checks and appends a node; returns (dtype, dims, rank) per output.")
      .def("set_dim_names", &PyGraphDef::SetDimNames, nb::arg("input"),
           nb::arg("names"))
      .def("add_output", &PyGraphDef::AddOutput, nb::arg("name"),
           nb::arg("tensor"))
      .def("validate",
           [](const PyGraphDef& g) { ThrowIfError(g.Validate()); })
      .def("serialize", &PyGraphDef::Serialize, nb::arg("text"))
      .def("truncate", &PyGraphDef::Truncate, nb::arg("keep"))
      .def("num_nodes", &PyGraphDef::num_nodes);
}

}  // namespace sluice::python
