// ImportOnnx for builds without libonnx: every call says how to get it.
#include "absl/strings/str_cat.h"
#include "onnx/importer.h"
#include "onnx/tensor_file.h"

namespace sluice {
namespace {

absl::Status NoOnnx(absl::string_view what) {
  return absl::UnimplementedError(
      absl::StrCat(what,
                   ": this sluice was built without ONNX import (install "
                   "libonnx-dev and re-run CMake)"));
}

}  // namespace

absl::StatusOr<GraphDef> ImportOnnx(const std::string& path,
                                    const OnnxImportOptions& options) {
  return NoOnnx(path);
}

absl::StatusOr<OnnxImport> ImportOnnxSharingValues(
    const std::string& path, const OnnxImportOptions& options) {
  return NoOnnx(path);
}

absl::StatusOr<GraphDef> ImportOnnxBytes(absl::string_view bytes,
                                         const std::string& base_dir,
                                         const OnnxImportOptions& options,
                                         absl::string_view model_name) {
  return NoOnnx(model_name);
}

bool OnnxImportAvailable() { return false; }

absl::StatusOr<Tensor> ReadOnnxTensorFile(const std::string& path) {
  return NoOnnx(path);
}

absl::Status WriteOnnxTensorFile(const Tensor& t, const std::string& name,
                                 const std::string& path) {
  return NoOnnx(path);
}

}  // namespace sluice
