// ONNX initializers stored as external data (data_location EXTERNAL) whose
// bytes in the weights file are the tensor's bytes exactly as sluice holds
// them. Such an initializer is mapped (or read) with ReadExternalTensor
// (core/external_data.h), like a .pb model's external weights, and its
// location is kept so that the importer can write a Const that refers to the
// file instead of copying the bytes into the GraphDef.
//
//   ASSIGN_OR_RETURN(ValuePtr w, AddInitializer(em, initializer, "models/bert",
//                                               /*reference_external=*/true));
//
// Stateless functions; thread-safe.
#ifndef SLUICE_ONNX_ONNX_EXTERNAL_H_
#define SLUICE_ONNX_ONNX_EXTERNAL_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "onnx/graph_emitter.h"
#include "onnx/onnx_pb.h"
#include "onnx/onnx_tensor.h"
#include "proto/types.pb.h"

namespace sluice {

// A tensor and the byte range of the weights file it was made from (path
// relative to the model's folder, as the ONNX location gives it).
struct OnnxExternalTensor {
  Tensor tensor;
  ExternalData range;
};

// Whether an ONNX tensor of `dtype` holds in its file the very bytes sluice
// keeps in memory (not bool, whose bytes ONNX allows to be any non-zero
// value, nor the packed sub-byte types).
bool OnnxExternalBytesAreTensorBytes(DataType dtype);

// For `proto` stored as external data in a dtype above: checks the location
// (relative, no "..", non-empty base_dir), the offset and length (a missing
// length means the rest of the file) against the tensor's size and the
// file's, then maps the range (ExternalDataMode::kMap: large aligned ranges)
// or reads it. nullopt when `proto` is not external data or its dtype is not
// one of those (TensorFromOnnx reads it then). Errors name the tensor, with
// the codes and messages of TensorFromOnnx.
absl::StatusOr<std::optional<OnnxExternalTensor>> ReadOnnxExternalTensor(
    const onnx::TensorProto& proto, const std::string& base_dir);

// Adds initializer `proto` to `em` as a constant. With `reference_external`,
// through ReadOnnxExternalTensor where it applies, with the value's
// `external` set (its Const node then refers to the file); otherwise, and
// for every other initializer, through TensorFromOnnx (read, then copied
// into the GraphDef when a node uses it), with `raw_in_file` (its raw_data
// left in the model's file, onnx/inline_weights.h) where given.
absl::StatusOr<ValuePtr> AddInitializer(
    GraphEmitter& em, const onnx::TensorProto& proto,
    const std::string& base_dir, bool reference_external,
    const RawDataInFile* raw_in_file = nullptr);

}  // namespace sluice

#endif  // SLUICE_ONNX_ONNX_EXTERNAL_H_
