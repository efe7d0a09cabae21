// ImportOnnx: turns an ONNX model (opsets 13 to 18) into a sluice GraphDef.
// ONNX nodes map onto sluice ops (docs/ops.md), initializers become Const
// nodes (raw_data, typed fields or external data next to the model), graph
// inputs become Input nodes and the signature. Shape-computing subgraphs
// (Shape -> Gather -> Concat -> Reshape, ConstantOfShape, Range, ...) are
// folded to constants from the input shapes, which the model gives or
// `input_shapes` / `dim_values` fix; sluice's structural attributes (Reshape
// shape, Slice bounds, reduce axes, ...) are taken from the folded values.
//
//   OnnxImportOptions options;
//   options.dim_values["batch"] = 1;
//   ASSIGN_OR_RETURN(GraphDef def, ImportOnnx("model.onnx", options));
//
// Errors: NOT_FOUND for a missing file or external data file;
// INVALID_ARGUMENT for a malformed model or a value that must be known at
// import time but is not (naming the node); UNIMPLEMENTED listing every node
// whose op or attributes sluice does not support, all at once.
//
// Stateless functions; thread-safe.
#ifndef SLUICE_ONNX_IMPORTER_H_
#define SLUICE_ONNX_IMPORTER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/resource_limits.h"
#include "core/tensor.h"
#include "proto/graph.pb.h"

namespace sluice {

struct OnnxImportOptions {
  // Shapes of graph inputs by ONNX input name; each replaces the model's
  // shape, where a -1 keeps the model's dimension there. Known dimensions
  // of the model must agree.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // Values for symbolic dimensions (ONNX dim_param) by name, for example
  // {"batch_size", 1}: applied to every input that uses them.
  std::map<std::string, int64_t> dim_values;
  // Fold a BatchNormalization into the Conv it follows (when the Conv's
  // output has no other reader and all parameters are constants); otherwise
  // it becomes Mul and Add with constants.
  bool fold_batch_norm = true;
  // Initializers stored as ONNX external data are mapped (large, aligned
  // ranges) or read as a .pb model's external weights are. By default the
  // Const node of one that is used unchanged refers to its range of the
  // weights file (path relative to the model's folder) instead of holding a
  // copy, so the GraphDef must be built with base_dir = the model's folder
  // (LoadModel does so). true copies the bytes into the GraphDef instead: a
  // self-contained GraphDef, to save somewhere else (sluice convert).
  bool embed_external_data = false;
  // What the import may create by folding constants (core/resource_limits.h,
  // the limits the optimizer's constant folding obeys too): past
  // max_folded_bytes in all, or for a constant over max_folded_constant_bytes
  // and its inputs' bytes, the computation stays in the graph and runs at
  // run time;
  // a constant the importer must make (a mask, an index table) larger than
  // max_created_tensor_bytes is RESOURCE_EXHAUSTED naming the node.
  ResourceLimits limits;
};

// Reads and imports an .onnx file; external data is resolved relative to
// the file's folder.
absl::StatusOr<GraphDef> ImportOnnx(const std::string& path,
                                    const OnnxImportOptions& options = {});

// ImportOnnx's GraphDef with the constants' values beside it: its Const
// nodes (initializers and folded constants) hold only dtype and shape (and
// an external range), and `const_values` their Tensors by node name, to be
// built with BuildGraphSharingConsts (graph/builder.h). The weights are then
// held once, by those Tensors, rather than again in the GraphDef: what
// LoadModelGraph does. Not a GraphDef to save (use ImportOnnx).
struct OnnxImport {
  GraphDef def;
  absl::flat_hash_map<std::string, Tensor> const_values;
};
absl::StatusOr<OnnxImport> ImportOnnxSharingValues(
    const std::string& path, const OnnxImportOptions& options = {});

// Imports a serialized ModelProto. `base_dir` is the folder external data
// is read from ("" allows none); `model_name` prefixes error messages.
absl::StatusOr<GraphDef> ImportOnnxBytes(
    absl::string_view bytes, const std::string& base_dir,
    const OnnxImportOptions& options = {},
    absl::string_view model_name = "<onnx>");

// Whether this build can import ONNX (false when libonnx was not found).
bool OnnxImportAvailable();

// Parses "name=1,3,224,224" (input_shapes) or "name=4" (dim_values) as
// given on the command line, adding it to `options`. A name without '='
// or with a non-integer is INVALID_ARGUMENT.
absl::Status ParseInputShapeFlag(absl::string_view flag,
                                 OnnxImportOptions* options);
absl::Status ParseDimValueFlag(absl::string_view flag,
                               OnnxImportOptions* options);

}  // namespace sluice

#endif  // SLUICE_ONNX_IMPORTER_H_
