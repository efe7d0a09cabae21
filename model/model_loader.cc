// LoadModel: dispatch on the model file's extension.
#include "model/model_loader.h"

#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "core/status_macros.h"

namespace sluice {

bool IsOnnxPath(const std::string& path) {
  return absl::EndsWith(absl::AsciiStrToLower(path), ".onnx");
}

absl::StatusOr<LoadedGraphDef> LoadModel(
    const std::string& path, const OnnxImportOptions& onnx_options) {
  if (!IsOnnxPath(path)) return LoadGraphDef(path);
  LoadedGraphDef out;
  ASSIGN_OR_RETURN(out.def, ImportOnnx(path, onnx_options));
  // ONNX (proto2) strings need not be UTF-8; a GraphDef's must.
  RETURN_IF_ERROR(CheckGraphDefUtf8(out.def, path));
  out.source.path = path;
  // Const nodes of ONNX external weights refer to their files, relative to
  // the model's folder, as ImportOnnx resolved them; with
  // embed_external_data every weight is inside the GraphDef.
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  out.source.base_dir = onnx_options.embed_external_data ? ""
                        : dir.empty()                     ? "."
                                                          : dir.string();
  return out;
}

absl::StatusOr<std::unique_ptr<const Graph>> LoadModelGraph(
    const std::string& path, const OnnxImportOptions& onnx_options) {
  ASSIGN_OR_RETURN(LoadedGraphDef model, LoadModel(path, onnx_options));
  return BuildGraph(model.def, model.source);
}

}  // namespace sluice
