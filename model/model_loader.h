// LoadModel: the one place that turns a model path into a GraphDef, whatever
// its format: sluice's .pb / .pbtxt (graph/loader.h) or ONNX's .onnx
// (onnx/importer.h). The tools and Session::CreateFromFile load through it,
// so every command that takes a model path takes all three.
//
//   ASSIGN_OR_RETURN(LoadedGraphDef model, LoadModel("resnet18.onnx"));
//   ASSIGN_OR_RETURN(std::unique_ptr<const Graph> g,
//                    BuildGraph(model.def, model.source));
//   // or in one step:
//   ASSIGN_OR_RETURN(std::unique_ptr<const Graph> g, LoadModelGraph(path));
//
// Stateless functions; thread-safe.
#ifndef SLUICE_MODEL_MODEL_LOADER_H_
#define SLUICE_MODEL_MODEL_LOADER_H_

#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "graph/graph.h"
#include "graph/loader.h"
#include "onnx/importer.h"

namespace sluice {

// Whether `path` names an ONNX model (extension .onnx, any case).
bool IsOnnxPath(const std::string& path);

// .onnx: ImportOnnx(path, onnx_options), with source.path = path and
// source.base_dir the model's folder (where the Const nodes of external
// weights point, unless onnx_options.embed_external_data); anything else:
// LoadGraphDef(path). Errors are those of the function called.
absl::StatusOr<LoadedGraphDef> LoadModel(
    const std::string& path, const OnnxImportOptions& onnx_options = {});

// The values of `def`'s top-level Consts (decoded as BuildGraph decodes
// them with `source`), each dropped from the GraphDef as soon as it is
// decoded, so that the parsed file and the tensors never both hold the
// weights; for BuildGraphSharingConsts (graph/builder.h). A value that
// does not decode stays in the GraphDef, for BuildGraph's error naming its
// node.
absl::flat_hash_map<std::string, Tensor> TakeConstValues(
    GraphDef* def, const GraphSource& source);

// LoadModel then BuildGraph; for .onnx, through ImportOnnxSharingValues,
// so that the weights are held once, by the graph's Tensors; for a
// GraphDef, through TakeConstValues. Both refuse a
// prepared model (model/prepared_model.h; Session::CreateFromFile takes
// it) with INVALID_ARGUMENT naming its source.
absl::StatusOr<std::unique_ptr<const Graph>> LoadModelGraph(
    const std::string& path, const OnnxImportOptions& onnx_options = {});

}  // namespace sluice

#endif  // SLUICE_MODEL_MODEL_LOADER_H_
