// ReadOnnxTensorFile: one ONNX TensorProto file (the format of the ONNX
// test data and of onnxruntime's test runner, test_data_set_0/input_0.pb)
// read as a host tensor, for every dtype sluice has: bfloat16, float8 and
// the 4-bit types included, which .npy cannot name; and written back.
// `sluice run` and `sluice bench` read `--input NAME=FILE.pb` with it, and
// `sluice run` writes NAME.pb beside NAME.npy for the dtypes .npy widens.
//
//   ASSIGN_OR_RETURN(Tensor x,
//                    ReadOnnxTensorFile("test_data_set_0/input_0.pb"));
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

// Writes host tensor `t` to `path` as a TensorProto named `name`, its data
// in raw_data (sub-byte types packed two or four to a byte, low bits
// first, as ONNX stores them). Errors: a dtype ONNX has no element type
// for, an unwritable file (naming it), UNIMPLEMENTED without libonnx.
absl::Status WriteOnnxTensorFile(const Tensor& t, const std::string& name,
                                 const std::string& path);

}  // namespace sluice

#endif  // SLUICE_ONNX_TENSOR_FILE_H_
