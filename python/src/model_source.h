// A model as Python hands it over: a path (.pb, .pbtxt, .onnx), or bytes
// (a serialized GraphDef, its text, or a serialized ONNX ModelProto), loaded
// into a validated Graph the way `sluice` commands load files.
//
//   ModelSource source{.bytes = serialized, .format = "onnx"};
//   ASSIGN_OR_RETURN(std::unique_ptr<const Graph> g, LoadModelSource(source, {}));
//
// Stateless; thread-safe.
#ifndef SLUICE_PYTHON_SRC_MODEL_SOURCE_H_
#define SLUICE_PYTHON_SRC_MODEL_SOURCE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "onnx/importer.h"

namespace sluice::python {

struct ModelSource {
  std::string path;   // a file, or "" when `bytes` holds the model
  std::string bytes;
  // "onnx", "pb" (binary GraphDef), "pbtxt"; "" guesses for bytes: a binary
  // GraphDef with nodes, else ONNX, else text.
  std::string format;
  // The name in reports and messages: the path, or "<bytes>".
  std::string name() const { return path.empty() ? "<bytes>" : path; }
};

// Errors: those of LoadModelGraph for a path; for bytes INVALID_ARGUMENT when
// no format reads them (naming each tried), FAILED_PRECONDITION for ONNX in
// a build without the importer.
absl::StatusOr<std::unique_ptr<const Graph>> LoadModelSource(
    const ModelSource& source, const OnnxImportOptions& onnx_options);

}  // namespace sluice::python

#endif  // SLUICE_PYTHON_SRC_MODEL_SOURCE_H_
