// ReadOnnxTensorFile: one ONNX TensorProto file (the format of the ONNX
// test data and of onnxruntime's test runner, test_data_set_0/input_0.pb)
// read as a host tensor, for every dtype sluice has: bfloat16, float8 and
// the 4-bit types included, which .npy cannot name. `sluice run` and
// `sluice bench` read `--input NAME=FILE.pb` with it.
//
//   ASSIGN_OR_RETURN(Tensor x, ReadOnnxTensorFile("test_data_set_0/input_0.pb"));
//
// Stateless; thread-safe.
#ifndef SLUICE_ONNX_TENSOR_FILE_H_
#define SLUICE_ONNX_TENSOR_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/tensor.h"

namespace sluice {

// The tensor in `path`, whose data must be in the file (raw_data or a
// typed field; external data is refused). Errors name the file: NOT_FOUND,
// INVALID_ARGUMENT for a file that is not a TensorProto or whose data does
// not match its shape, UNIMPLEMENTED in a build without libonnx.
absl::StatusOr<Tensor> ReadOnnxTensorFile(const std::string& path);

}  // namespace sluice

#endif  // SLUICE_ONNX_TENSOR_FILE_H_
