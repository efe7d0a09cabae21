// ImportOnnx: reading the model, checking every node is supported, then
// converting graph inputs, initializers and nodes in order.
#include "onnx/importer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "graph/attr_map.h"
#include "onnx/graph_emitter.h"
#include "onnx/import_context.h"
#include "onnx/inline_weights.h"
#include "onnx/model_checker.h"
#include "onnx/onnx_external.h"
#include "onnx/onnx_tensor.h"
#include "onnx/op_versions.h"

namespace sluice {
namespace {

bool IsDefaultDomain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

// The model's opset of the default domain. A model of other domains only
// (an ai.onnx.ml pipeline) may import none; it gets the newest, which none of
// its nodes reads.
absl::StatusOr<int> DefaultOpset(const onnx::ModelProto& model,
                                 absl::string_view model_name) {
  for (const onnx::OperatorSetIdProto& id : model.opset_import()) {
    if (!IsDefaultDomain(id.domain())) continue;
    // Which versions of each op the model's opset means, and whether
    // sluice implements them, is decided per node (CheckSupported).
    if (id.version() < OldestImportedOpset() ||
        id.version() > NewestKnownOpset()) {
      return absl::UnimplementedError(absl::StrCat(
          model_name, ": opset ", id.version(), " of the default ONNX domain; ",
          "sluice knows opsets ", OldestImportedOpset(), " to ",
          NewestKnownOpset(),
          " (re-export, or convert with onnx.version_converter)"));
    }
    return static_cast<int>(id.version());
  }
  for (const onnx::NodeProto& node : model.graph().node()) {
    if (IsDefaultDomain(node.domain())) {
      return absl::InvalidArgumentError(absl::StrCat(
          model_name, ": the model imports no opset of the default ONNX domain",
          " and node '", node.name(), "' (", node.op_type(), ") is of it"));
    }
  }
  return NewestKnownOpset();
}

// Every node of `graph` and of its subgraphs (control flow) that the
// importer cannot convert, with the reason.
// A node of another domain is reported with that domain's opset.
void CollectUnsupported(const onnx::ModelProto& model,
                        const onnx::GraphProto& graph, int opset,
                        std::vector<std::string>* problems) {
  const OnnxOpTable& table = GetOnnxOpTable();
  for (const onnx::NodeProto& node : graph.node()) {
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.has_g()) CollectUnsupported(model, a.g(), opset, problems);
      for (const onnx::GraphProto& g : a.graphs()) {
        CollectUnsupported(model, g, opset, problems);
      }
    }
    std::string reason;
    std::string where = absl::StrCat("opset ", opset);
    const std::string key = OnnxOpKey(node);
    int node_opset = opset;  // of the node's domain
    if (!IsDefaultDomain(node.domain())) {
      node_opset = ImportedOpset(model, node.domain());
      where = node_opset > 0
                  ? absl::StrCat(node.domain(), " opset ", node_opset)
                  : absl::StrCat(node.domain(), ", which the model imports "
                                                "no opset of");
      if (!OnnxDomainHasOps(node.domain())) {
        reason = absl::StrCat("domain '", node.domain(), "' is not supported");
      } else if (node_opset <= 0) {
        reason = "import an opset of its domain";
      }
    }
    if (reason.empty()) {
      auto it = table.find(key);
      if (it == table.end()) {
        reason = OnnxOpVersion(key, node_opset) == 0
                     ? absl::StrCat("op ", node.op_type(), " is not an ",
                                    IsDefaultDomain(node.domain())
                                        ? std::string("ONNX")
                                        : node.domain(),
                                    " op at opset ", node_opset)
                     : "op not supported";
      } else {
        reason = UnhandledVersionReason(key, node_opset);
        if (reason.empty() && it->second.check != nullptr) {
          reason = it->second.check(node, node_opset);
        }
      }
    }
    if (!reason.empty()) {
      std::string name = node.name().empty() && node.output_size() > 0
                             ? node.output(0)
                             : node.name();
      problems->push_back(absl::StrCat("  node '", name, "' (",
                                       node.op_type(), ", ", where,
                                       "): ", reason));
    }
  }
}

// Every node the importer cannot convert, with the reason, in one message.
absl::Status CheckSupported(const onnx::ModelProto& model, int opset,
                            absl::string_view model_name) {
  std::vector<std::string> problems;
  CollectUnsupported(model, model.graph(), opset, &problems);
  if (problems.empty()) return absl::OkStatus();
  return absl::UnimplementedError(
      absl::StrCat(model_name, ": ", problems.size(),
                   problems.size() == 1 ? " node uses" : " nodes use",
                   " ops or attributes sluice does not support:\n",
                   absl::StrJoin(problems, "\n")));
}

// The shape of a graph input: the model's, with symbolic dims from
// dim_values and the whole shape from input_shapes when given.
absl::StatusOr<Shape> InputShape(const onnx::ValueInfoProto& info,
                                 const OnnxImportOptions& options) {
  const onnx::TypeProto::Tensor& tt = info.type().tensor_type();
  Shape shape = Shape::UnknownRank();
  if (tt.has_shape()) {
    shape = Shape();
    for (const onnx::TensorShapeProto::Dimension& d : tt.shape().dim()) {
      int64_t dim = kUnknownDim;
      if (d.has_dim_value() && d.dim_value() >= 0) dim = d.dim_value();
      if (d.has_dim_param()) {
        auto it = options.dim_values.find(d.dim_param());
        if (it != options.dim_values.end()) dim = it->second;
      }
      shape.AddDim(dim);
    }
  }
  auto it = options.input_shapes.find(info.name());
  if (it == options.input_shapes.end()) return shape;
  const std::vector<int64_t>& given = it->second;
  if (!shape.unknown_rank() && shape.rank() != static_cast<int>(given.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("input_shapes gives '", info.name(), "' rank ",
                     given.size(), ", the model has ", shape.DebugString()));
  }
  Shape out;
  for (size_t i = 0; i < given.size(); ++i) {
    int64_t model_dim = shape.unknown_rank() ? kUnknownDim : shape.dim(i);
    int64_t dim = given[i] < 0 ? model_dim : given[i];
    if (model_dim >= 0 && dim != model_dim) {
      return absl::InvalidArgumentError(
          absl::StrCat("input_shapes gives '", info.name(), "' dimension ", i,
                       " = ", dim, ", the model fixes it to ", model_dim));
    }
    out.AddDim(dim);
  }
  return out;
}

// Marks each Conv -> BatchNormalization pair whose BN can be folded into the
// Conv: the Conv output is read by the BN alone and is not a graph output.
void FindFoldableBatchNorms(const onnx::GraphProto& graph, ImportContext& ctx) {
  absl::flat_hash_map<std::string, int> readers;
  absl::flat_hash_map<std::string, int> producer;
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const std::string& in : graph.node(i).input()) ++readers[in];
    for (const std::string& out : graph.node(i).output()) producer[out] = i;
  }
  for (const onnx::ValueInfoProto& out : graph.output()) ++readers[out.name()];
  for (const onnx::NodeProto& bn : graph.node()) {
    if (bn.op_type() != "BatchNormalization" || bn.input_size() < 5) continue;
    auto it = producer.find(bn.input(0));
    if (it == producer.end()) continue;
    const onnx::NodeProto& conv = graph.node(it->second);
    if (conv.op_type() != "Conv" || readers[bn.input(0)] != 1) continue;
    bool constant = true;
    for (int k = 1; k < 5; ++k) {
      ValuePtr v = ctx.Find(bn.input(k));
      constant = constant && v != nullptr && v->constant.has_value();
    }
    for (int k = 1; k < conv.input_size(); ++k) {
      ValuePtr v = ctx.Find(conv.input(k));
      constant = constant && v != nullptr && v->constant.has_value();
    }
    if (!constant) continue;
    ctx.folded_bn()[&conv] = &bn;
    ctx.skipped().insert(&bn);
  }
}

// A graph output's declared type and shape against what the import infers
// (as onnx.checker's full check does): an element type, a rank or a known
// dimension that differs is INVALID_ARGUMENT naming the output. Dimensions
// are not compared when input_shapes changed the model's input shapes.
absl::Status CheckDeclaredOutput(const onnx::ValueInfoProto& out,
                                 const ValueData& v,
                                 const OnnxImportOptions& options) {
  if (!out.has_type() || !out.type().has_tensor_type()) return absl::OkStatus();
  const onnx::TypeProto::Tensor& declared = out.type().tensor_type();
  if (declared.elem_type() != 0) {
    absl::StatusOr<DataType> dtype = DataTypeFromOnnx(declared.elem_type());
    if (dtype.ok() && *dtype != v.dtype) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph output '", out.name(), "' is declared ",
          DataTypeName(*dtype), " but its producer makes ",
          DataTypeName(v.dtype)));
    }
  }
  if (!declared.has_shape() || v.shape.unknown_rank()) return absl::OkStatus();
  const onnx::TensorShapeProto& shape = declared.shape();
  if (shape.dim_size() != v.shape.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "graph output '", out.name(), "' is declared with rank ",
        shape.dim_size(), " but its producer makes ", v.shape.DebugString(),
        " (rank ", v.shape.rank(), ")"));
  }
  if (!options.input_shapes.empty()) return absl::OkStatus();
  for (int i = 0; i < shape.dim_size(); ++i) {
    const onnx::TensorShapeProto::Dimension& d = shape.dim(i);
    if (!d.has_dim_value() || v.shape.dim(i) < 0) continue;
    if (d.dim_value() != v.shape.dim(i)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "graph output '", out.name(), "' is declared with dimension ", i,
          " = ", d.dim_value(), " but its producer makes ",
          v.shape.DebugString()));
    }
  }
  return absl::OkStatus();
}

absl::Status ConvertTopLevelNodes(const onnx::GraphProto& graph,
                                  ImportContext& ctx);

// Frees an initializer's inline bytes once its Tensor holds them (a copy:
// the Tensor's memory is the CPU allocator's, aligned as kernels expect), so
// that the parsed model and the tensors never both hold all the weights.
void ReleaseInlineData(onnx::TensorProto* init) {
  std::string().swap(*init->mutable_raw_data());
  google::protobuf::RepeatedField<float>().Swap(init->mutable_float_data());
  google::protobuf::RepeatedField<int32_t>().Swap(init->mutable_int32_data());
  google::protobuf::RepeatedField<int64_t>().Swap(init->mutable_int64_data());
  google::protobuf::RepeatedField<double>().Swap(init->mutable_double_data());
}

// Imports `model`, whose initializers' inline bytes it frees as it reads
// them (the model is not used again). With `values`, Const nodes hold only
// dtype and shape and their Tensors go there (GraphEmitter's value sink).
absl::StatusOr<GraphDef> ImportModel(
    onnx::ModelProto* model_ptr, const std::string& base_dir,
    const OnnxImportOptions& options, absl::string_view model_name,
    absl::flat_hash_map<std::string, Tensor>* values = nullptr,
    const WeightsInFile* weights_in_file = nullptr) {
  const onnx::ModelProto& model = *model_ptr;
  RETURN_IF_ERROR(CheckOnnxModel(model, model_name));
  ASSIGN_OR_RETURN(int opset, DefaultOpset(model, model_name));
  const onnx::GraphProto& graph = model.graph();
  RETURN_IF_ERROR(CheckSupported(model, opset, model_name));

  GraphDef def;
  FoldBudget fold_budget(options.limits);
  GraphEmitter em(&def, options.limits, &fold_budget);
  if (values != nullptr) em.set_value_sink(values);
  ImportContext ctx(&em, &options, opset, base_dir);
  auto fail = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat(model_name, ": ", s.message()));
  };

  for (int i = 0; i < graph.initializer_size(); ++i) {
    const onnx::TensorProto& init = graph.initializer(i);
    absl::StatusOr<ValuePtr> v = AddInitializer(
        em, init, base_dir, !options.embed_external_data,
        weights_in_file == nullptr ? nullptr : weights_in_file->Find(i));
    if (!v.ok()) return fail(v.status());
    ctx.Bind(init.name(), *std::move(v));
    ReleaseInlineData(model_ptr->mutable_graph()->mutable_initializer(i));
  }
  for (const onnx::ValueInfoProto& info : graph.input()) {
    if (ctx.Find(info.name()) != nullptr) continue;  // an initializer
    if (!info.type().has_tensor_type()) {
      return fail(absl::UnimplementedError(
          absl::StrCat("graph input '", info.name(), "' is not a tensor")));
    }
    absl::StatusOr<DataType> dtype =
        DataTypeFromOnnx(info.type().tensor_type().elem_type());
    if (!dtype.ok()) {
      return fail(absl::UnimplementedError(absl::StrCat(
          "graph input '", info.name(), "': ", dtype.status().message())));
    }
    absl::StatusOr<Shape> shape = InputShape(info, options);
    if (!shape.ok()) return fail(shape.status());
    std::string name = SanitizeNodeName(info.name());
    absl::StatusOr<ValuePtr> v = em.AddInput(name, *dtype, *shape);
    if (!v.ok()) return fail(v.status());
    ctx.Bind(info.name(), *v);
    TensorInfo* sig = def.mutable_signature()->add_inputs();
    sig->set_name(name);
    sig->set_dtype(*dtype);
    *sig->mutable_shape() = ShapeToProto(*shape);
    const auto& dims = info.type().tensor_type().shape().dim();
    bool named = false;
    for (const onnx::TensorShapeProto::Dimension& d : dims) {
      named = named || (d.has_dim_param() && !d.dim_param().empty());
    }
    for (int i = 0; named && i < dims.size(); ++i) {
      sig->add_dim_names(dims[i].has_dim_param() ? dims[i].dim_param() : "");
    }
  }
  std::set<std::string> dim_params;
  for (const onnx::ValueInfoProto& info : graph.input()) {
    for (const auto& d : info.type().tensor_type().shape().dim()) {
      if (d.has_dim_param() && !d.dim_param().empty()) {
        dim_params.insert(d.dim_param());
      }
    }
  }
  for (const auto& [dim, value] : options.dim_values) {
    if (dim_params.count(dim) == 0) {
      return fail(absl::InvalidArgumentError(absl::StrCat(
          "'", dim, "' (--dim, dim_values) is not a symbolic dimension of the "
          "graph inputs (they have: ",
          dim_params.empty() ? "none" : absl::StrJoin(dim_params, ", "),
          ")")));
    }
  }
  for (const auto& [name, dims] : options.input_shapes) {
    bool found = false;
    for (const onnx::ValueInfoProto& info : graph.input()) {
      found = found || info.name() == name;
    }
    if (!found) {
      return fail(absl::InvalidArgumentError(absl::StrCat(
          "input_shapes names '", name, "', which is not a graph input")));
    }
  }
  if (options.fold_batch_norm) FindFoldableBatchNorms(graph, ctx);

  if (absl::Status s = ConvertTopLevelNodes(graph, ctx); !s.ok()) {
    return fail(s);
  }

  for (const onnx::ValueInfoProto& out : graph.output()) {
    ValuePtr v = ctx.Find(out.name());
    if (v == nullptr) {
      return fail(absl::InvalidArgumentError(absl::StrCat(
          "graph output '", out.name(), "' is produced by no node")));
    }
    if (absl::Status s = CheckDeclaredOutput(out, *v, options); !s.ok()) {
      return fail(s);
    }
    absl::StatusOr<std::string> ref = em.Materialize(v);
    if (!ref.ok()) return fail(ref.status());
    TensorInfo* sig = def.mutable_signature()->add_outputs();
    sig->set_name(out.name());
    sig->set_tensor(*ref);
    sig->set_dtype(v->dtype);
    *sig->mutable_shape() = ShapeToProto(v->shape);
    // The output's declared symbolic dims ("N") where inference left the
    // dim unknown, so the signature names them as it does the inputs'.
    const auto& dims = out.type().tensor_type().shape().dim();
    bool named = false;
    for (int i = 0; i < dims.size() && !v->shape.unknown_rank() &&
                    dims.size() == v->shape.rank();
         ++i) {
      named = named || (!dims[i].dim_param().empty() && v->shape.dim(i) < 0);
    }
    for (int i = 0; named && i < dims.size(); ++i) {
      sig->add_dim_names(v->shape.dim(i) < 0 ? dims[i].dim_param() : "");
    }
  }
  return def;
}

}  // namespace

namespace {

absl::Status ConvertNode(const onnx::NodeProto& node, ImportContext& ctx) {
  absl::Status s = GetOnnxOpTable().at(OnnxOpKey(node)).convert(node, ctx);
  if (s.ok()) return s;
  std::string msg(s.message());
  if (msg.find(NodeLabel(node)) == std::string::npos) {
    msg = absl::StrCat(NodeLabel(node), ": ", msg);
  }
  return absl::Status(s.code(), msg);
}

// Counts, for each name, the inputs and graph outputs that read it in
// `graph` and in every subgraph below it (a subgraph may read outer names).
void CountReaders(const onnx::GraphProto& graph,
                  absl::flat_hash_map<std::string, int>* readers) {
  for (const onnx::ValueInfoProto& out : graph.output()) ++(*readers)[out.name()];
  for (const onnx::NodeProto& node : graph.node()) {
    for (const std::string& in : node.input()) ++(*readers)[in];
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.has_g()) CountReaders(a.g(), readers);
      for (const onnx::GraphProto& g : a.graphs()) CountReaders(g, readers);
    }
  }
}

// ConvertNodes for the model's graph, which also forgets each value after
// its last reader: a weight folded into another (a Conv's, by its
// BatchNormalization) is freed then rather than at the end of the import.
// Reads from subgraphs and graph outputs are never counted down, so such
// values stay.
absl::Status ConvertTopLevelNodes(const onnx::GraphProto& graph,
                                  ImportContext& ctx) {
  absl::flat_hash_map<std::string, int> readers;
  CountReaders(graph, &readers);
  for (const onnx::NodeProto& node : graph.node()) {
    if (ctx.skipped().contains(&node)) continue;
    RETURN_IF_ERROR(ConvertNode(node, ctx));
    for (const std::string& in : node.input()) {
      auto it = readers.find(in);
      // Forgotten (bound to nothing): a later read would be a clear
      // NOT_FOUND, not a use of freed memory.
      if (it != readers.end() && --it->second == 0) ctx.Bind(in, nullptr);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ConvertNodes(const onnx::GraphProto& graph, ImportContext& ctx) {
  for (const onnx::NodeProto& node : graph.node()) {
    if (ctx.skipped().contains(&node)) continue;
    RETURN_IF_ERROR(ConvertNode(node, ctx));
  }
  return absl::OkStatus();
}

namespace {

// Parses a serialized ModelProto.
absl::StatusOr<std::unique_ptr<onnx::ModelProto>> ParseModel(
    absl::string_view bytes, absl::string_view model_name) {
  auto model = std::make_unique<onnx::ModelProto>();
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !model->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        model_name, ": not a valid ONNX model (the ModelProto does not parse",
        bytes.size() > static_cast<size_t>(INT32_MAX)
            ? "; files over 2 GiB must keep their weights as external data"
            : "",
        ")"));
  }
  if (!model->has_graph()) {
    return absl::InvalidArgumentError(
        absl::StrCat(model_name, ": the ONNX model has no graph"));
  }
  return model;
}

// The parsed model at `path`, its large initializer raw_data left in the
// file (onnx/inline_weights.h) and read into the tensors by ImportModel;
// a file that walk does not follow is parsed by protobuf from the file in
// pieces (FileInputStream), for protobuf's verdict. Either way the file's
// bytes are never held whole beside the parsed model.
absl::StatusOr<ModelLeavingWeightsInFile> ReadModel(const std::string& path,
                                                    std::string* base_dir) {
  // stat before opening: opening a FIFO would block.
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ONNX model '", path, "' exists but is not a regular file",
        std::filesystem::is_directory(st) ? " (it is a directory)" : ""));
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot open ONNX model '", path, "'"));
  }
  struct stat info;
  const bool stat_ok = fstat(fd, &info) == 0;
  const bool too_big =
      stat_ok && info.st_size > static_cast<off_t>(INT32_MAX);
  ModelLeavingWeightsInFile read;
  bool parsed = false;
  if (stat_ok && !too_big) {
    // The result owns fd from here, also when the walk fails.
    absl::StatusOr<ModelLeavingWeightsInFile> walked =
        ReadModelLeavingWeightsInFile(fd, static_cast<int64_t>(info.st_size));
    if (walked.ok()) {
      read = *std::move(walked);
      parsed = true;
    } else {
      read.model = std::make_unique<onnx::ModelProto>();
      const int again = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      parsed = again >= 0 && read.model->ParseFromFileDescriptor(again);
      if (again >= 0) close(again);
    }
  } else {
    close(fd);
  }
  const onnx::ModelProto* model = read.model.get();
  if (!parsed) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a valid ONNX model (the ModelProto does not parse",
        too_big ? "; files over 2 GiB must keep their weights as external data"
                : "",
        ")"));
  }
  if (!model->has_graph()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the ONNX model has no graph"));
  }
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  *base_dir = dir.empty() ? std::string(".") : dir.string();
  return read;
}

}  // namespace

absl::StatusOr<GraphDef> ImportOnnxBytes(absl::string_view bytes,
                                         const std::string& base_dir,
                                         const OnnxImportOptions& options,
                                         absl::string_view model_name) {
  ASSIGN_OR_RETURN(std::unique_ptr<onnx::ModelProto> model,
                   ParseModel(bytes, model_name));
  return ImportModel(model.get(), base_dir, options, model_name);
}

absl::StatusOr<GraphDef> ImportOnnx(const std::string& path,
                                    const OnnxImportOptions& options) {
  std::string base_dir;
  ASSIGN_OR_RETURN(ModelLeavingWeightsInFile read, ReadModel(path, &base_dir));
  return ImportModel(read.model.get(), base_dir, options, path, nullptr,
                     &read.weights);
}

absl::StatusOr<OnnxImport> ImportOnnxSharingValues(
    const std::string& path, const OnnxImportOptions& options) {
  std::string base_dir;
  ASSIGN_OR_RETURN(ModelLeavingWeightsInFile read, ReadModel(path, &base_dir));
  OnnxImport out;
  ASSIGN_OR_RETURN(out.def,
                   ImportModel(read.model.get(), base_dir, options, path,
                               &out.const_values, &read.weights));
  return out;
}

bool OnnxImportAvailable() { return true; }

}  // namespace sluice
