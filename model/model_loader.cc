// LoadModel: dispatch on the model file's extension.
#include "model/model_loader.h"

#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/tensor_proto.h"
#include "graph/builder.h"
#include "model/prepared_model.h"

namespace sluice {

bool IsOnnxPath(const std::string& path) {
  return absl::EndsWith(absl::AsciiStrToLower(path), ".onnx");
}

namespace {

// Where an imported ONNX model's GraphDef comes from. Const nodes of ONNX
// external weights refer to their files, relative to the model's folder, as
// the importer resolved them; with embed_external_data every weight is
// inside the GraphDef.
GraphSource OnnxSource(const std::string& path,
                       const OnnxImportOptions& onnx_options) {
  GraphSource source;
  source.path = path;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  source.base_dir = onnx_options.embed_external_data ? ""
                    : dir.empty()                     ? "."
                                                      : dir.string();
  return source;
}

// A prepared model is no GraphDef: say what takes it.
absl::Status NotAPreparedModel(const std::string& path) {
  if (!IsPreparedModelFile(path)) return absl::OkStatus();
  absl::StatusOr<PreparedModelHeader> h = ReadPreparedModelHeader(path);
  return absl::InvalidArgumentError(absl::StrCat(
      path,
      " is a prepared model (`sluice convert --optimized`): `sluice run`, "
      "`bench`, `inspect` and Session::CreateFromFile take it; give this "
      "command its source model",
      h.ok() && !h->source_path().empty()
          ? absl::StrCat(", ", h->source_path())
          : std::string()));
}

}  // namespace

absl::StatusOr<LoadedGraphDef> LoadModel(
    const std::string& path, const OnnxImportOptions& onnx_options) {
  RETURN_IF_ERROR(NotAPreparedModel(path));
  if (!IsOnnxPath(path)) return LoadGraphDef(path);
  LoadedGraphDef out;
  ASSIGN_OR_RETURN(out.def, ImportOnnx(path, onnx_options));
  // ONNX (proto2) strings need not be UTF-8; a GraphDef's must.
  RETURN_IF_ERROR(CheckGraphDefUtf8(out.def, path));
  out.source = OnnxSource(path, onnx_options);
  return out;
}

absl::flat_hash_map<std::string, Tensor> TakeConstValues(
    GraphDef* def, const GraphSource& source) {
  absl::flat_hash_map<std::string, Tensor> values;
  for (NodeDef& n : *def->mutable_node()) {
    if (n.op() != "Const" || values.contains(n.name())) continue;
    auto it = n.mutable_attr()->find("value");
    if (it == n.mutable_attr()->end() || !it->second.has_tensor()) continue;
    absl::StatusOr<Tensor> t = TensorFromProto(
        it->second.tensor(), source.base_dir, source.external_data);
    if (!t.ok()) continue;
    values.emplace(n.name(), *std::move(t));
    ClearTensorData(it->second.mutable_tensor());
  }
  return values;
}

absl::StatusOr<std::unique_ptr<const Graph>> LoadModelGraph(
    const std::string& path, const OnnxImportOptions& onnx_options) {
  RETURN_IF_ERROR(NotAPreparedModel(path));
  if (!IsOnnxPath(path)) {
    ASSIGN_OR_RETURN(LoadedGraphDef model, LoadGraphDef(path));
    absl::flat_hash_map<std::string, Tensor> values =
        TakeConstValues(&model.def, model.source);
    return BuildGraphSharingConsts(model.def, model.source, values);
  }
  // The importer's Tensors become the graph's: the GraphDef between them
  // holds no weights (ImportOnnxSharingValues), and it and the importer's
  // state are freed once the graph is built.
  ASSIGN_OR_RETURN(OnnxImport imported,
                   ImportOnnxSharingValues(path, onnx_options));
  RETURN_IF_ERROR(CheckGraphDefUtf8(imported.def, path));
  return BuildGraphSharingConsts(imported.def, OnnxSource(path, onnx_options),
                                 imported.const_values);
}

}  // namespace sluice
