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

#include "absl/status/statusor.h"
#include "core/tensor.h"
#include "onnx/onnx_pb.h"

namespace sluice {

// The sluice dtype of an ONNX element type (TensorProto::DataType).
// UNIMPLEMENTED for types sluice has no dtype for (string, uint16, int16,
// uint32, uint64, complex, float8), naming the type.
absl::StatusOr<DataType> DataTypeFromOnnx(int32_t elem_type);
// "FLOAT", "INT64", ...; "type N" for numbers this libonnx does not know.
std::string OnnxTypeName(int32_t elem_type);

// Builds a host tensor from an ONNX tensor. Sizes are checked before any
// allocation: every dim >= 0, at most kMaxElements elements, and the data
// (raw_data, the typed field, or the external byte range) must hold exactly
// elements x dtype-size bytes. External locations must be relative paths that
// stay inside `base_dir`; an empty base_dir allows no external data. Errors
// name the tensor.
absl::StatusOr<Tensor> TensorFromOnnx(const onnx::TensorProto& proto,
                                      const std::string& base_dir);

}  // namespace sluice

#endif  // SLUICE_ONNX_ONNX_TENSOR_H_
