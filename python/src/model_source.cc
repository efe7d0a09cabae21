#include "python/src/model_source.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "model/model_loader.h"

namespace sluice::python {
namespace {

absl::StatusOr<GraphDef> ParseBinary(const std::string& bytes) {
  GraphDef def;
  if (!def.ParseFromString(bytes)) {
    return absl::InvalidArgumentError("the bytes are not a binary GraphDef");
  }
  return def;
}

absl::StatusOr<GraphDef> ParseText(const std::string& bytes) {
  GraphDef def;
  google::protobuf::TextFormat::Parser parser;
  if (!parser.ParseFromString(bytes, &def)) {
    return absl::InvalidArgumentError("the bytes are not a GraphDef in text format");
  }
  return def;
}

absl::StatusOr<GraphDef> ParseOnnx(const std::string& bytes,
                                   const OnnxImportOptions& options) {
  if (!OnnxImportAvailable()) {
    return absl::FailedPreconditionError(
        "this build of sluice has no ONNX importer (libonnx was not found)");
  }
  return ImportOnnxBytes(bytes, /*base_dir=*/"", options, "<onnx bytes>");
}

// A binary GraphDef parse of ONNX or text bytes can succeed with nothing
// sensible in it; a real graph has nodes, each with an op.
bool LooksLikeGraphDef(const GraphDef& def) {
  if (def.node_size() == 0) return false;
  for (const NodeDef& n : def.node()) {
    if (n.op().empty() || n.name().empty()) return false;
  }
  return true;
}

absl::StatusOr<GraphDef> ParseBytes(const ModelSource& source,
                                    const OnnxImportOptions& options) {
  const std::string& f = source.format;
  if (f == "pb") return ParseBinary(source.bytes);
  if (f == "pbtxt") return ParseText(source.bytes);
  if (f == "onnx") return ParseOnnx(source.bytes, options);
  if (!f.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "format '", f, "' is not one of 'pb', 'pbtxt', 'onnx'"));
  }
  absl::StatusOr<GraphDef> binary = ParseBinary(source.bytes);
  if (binary.ok() && LooksLikeGraphDef(*binary)) return binary;
  if (OnnxImportAvailable() && !source.bytes.empty() && source.bytes[0] == 0x08) {
    absl::StatusOr<GraphDef> onnx = ParseOnnx(source.bytes, options);
    if (onnx.ok()) return onnx;
  }
  absl::StatusOr<GraphDef> text = ParseText(source.bytes);
  if (text.ok()) return text;
  return absl::InvalidArgumentError(
      "the bytes are neither a GraphDef (binary or text) nor an ONNX model; "
      "pass format='pb', 'pbtxt' or 'onnx' to see that format's error");
}

}  // namespace

absl::StatusOr<std::unique_ptr<const Graph>> LoadModelSource(
    const ModelSource& source, const OnnxImportOptions& onnx_options) {
  if (!source.path.empty()) return LoadModelGraph(source.path, onnx_options);
  ASSIGN_OR_RETURN(GraphDef def, ParseBytes(source, onnx_options));
  RETURN_IF_ERROR(CheckGraphDefUtf8(def, source.name()));
  GraphSource where;
  where.path = source.name();
  return BuildGraph(def, where);
}

}  // namespace sluice::python
