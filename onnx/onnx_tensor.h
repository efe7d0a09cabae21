// Converting ONNX element types and ONNX TensorProtos (initializers and
// Constant values) into sluice dtypes and host Tensors: raw_data, the typed
// value fields, and external data (data_location EXTERNAL: location, offset
// and length, the location relative to the model's folder).
//
//   ASSIGN_OR_RETURN(DataType dt, DataTypeFromOnnx(onnx::TensorProto::FLOAT));
//   ASSIGN_OR_RETURN(Tensor w, TensorFromOnnx(initializer, "models/bert"));
//
// Stateless functions; thread-safe.
#ifndef SLUICE_ONNX_ONNX_TENSOR_H_
#define SLUICE_ONNX_ONNX_TENSOR_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"
#include "onnx/onnx_pb.h"

namespace sluice {

// ONNX element types newer than the libonnx that sluice builds against
// (TensorProto::DataType numbers of onnx 1.23).
inline constexpr int32_t kOnnxFLOAT8E4M3FN = 17;
inline constexpr int32_t kOnnxFLOAT8E4M3FNUZ = 18;
inline constexpr int32_t kOnnxFLOAT8E5M2 = 19;
inline constexpr int32_t kOnnxFLOAT8E5M2FNUZ = 20;
inline constexpr int32_t kOnnxUINT4 = 21;
inline constexpr int32_t kOnnxINT4 = 22;
inline constexpr int32_t kOnnxFLOAT4E2M1 = 23;
inline constexpr int32_t kOnnxFLOAT8E8M0 = 24;
inline constexpr int32_t kOnnxUINT2 = 25;
inline constexpr int32_t kOnnxINT2 = 26;

// The sluice dtype of an ONNX element type (TensorProto::DataType).
// UNIMPLEMENTED for types sluice has no dtype for (string, complex, float6),
// naming the type.
absl::StatusOr<DataType> DataTypeFromOnnx(int32_t elem_type);
// "FLOAT", "INT64", "FLOAT8E4M3FN", ...; "type N" for numbers neither this
// libonnx nor the constants above know.
std::string OnnxTypeName(int32_t elem_type);
// INVALID_ARGUMENT "ONNX tensor '<name>': <message>".
absl::Status TensorError(const onnx::TensorProto& proto,
                         absl::string_view message);

// Builds a host tensor from an ONNX tensor. Sizes are checked before any
// allocation: every dim >= 0, at most kMaxElements elements, and the data
// (raw_data, the typed field, or the external byte range) must hold exactly
// elements x dtype-size bytes; for the sub-byte dtypes (int4, uint4, int2,
// uint2, float4 E2M1) ceil(elements x bits / 8) packed bytes, low bits first,
// which are spread to one byte per element. External locations must be
// relative paths that stay inside `base_dir` (ExternalPath); an empty
// base_dir allows no external data. Errors name the tensor.
//
// `raw_in_file`, where given, is the proto's raw_data left in the model's
// file (onnx/inline_weights.h): it is checked like raw_data and read from
// the file into the tensor's memory; a file that no longer holds the range
// is DATA_LOSS, naming the tensor.
struct RawDataInFile {
  int fd = -1;
  int64_t offset = 0;
  int64_t length = 0;
};
absl::StatusOr<Tensor> TensorFromOnnx(
    const onnx::TensorProto& proto, const std::string& base_dir,
    const RawDataInFile* raw_in_file = nullptr);

// The file an external data `location` of `proto` names: a relative path
// without "..", which also resolves (following symbolic links) inside
// `base_dir`, and is a regular file if it exists. Errors name the tensor.
absl::StatusOr<std::string> ExternalPath(const onnx::TensorProto& proto,
                                         const std::string& base_dir,
                                         const std::string& location);

}  // namespace sluice

#endif  // SLUICE_ONNX_ONNX_TENSOR_H_
