// NumPy .npy files: reading them into host Tensors and writing Tensors out,
// so that `sluice run` can take inputs from and give outputs to NumPy.
//
//   SLUICE_ASSIGN_OR_RETURN(sluice::Tensor x, sluice::ReadNpy("x.npy"));
//   SLUICE_RETURN_IF_ERROR(sluice::WriteNpy(y, "out/y.npy"));
//
// Format versions 1.0, 2.0 and 3.0 are read; 1.0 is written (2.0 when the
// header needs it). Only little-endian, C-order arrays of these dtypes:
//   '<f4' float32, '<f2' float16, '<f8' float64, '|i1' int8, '<i2' int16,
//   '<i4' int32, '<i8' int64, '|u1' uint8, '<u2' uint16, '<u4' uint32,
//   '<u8' uint64, '|b1' bool.
// NumPy has no bfloat16, float8, float4 or 4- and 2-bit integers: bfloat16,
// float8 and float4 tensors are written as '<f4' float32 (the conversion is
// exact), int4 and int2 as '|i1', uint4 and uint2 as '|u1'; reading never
// yields them (ml_dtypes' '|V1' and '|V2' are rejected; convert first).
// Everything about a file is checked before memory is allocated for it:
// Fortran order, big-endian data, object and other unsupported dtypes, a
// malformed header, more than 2^48 elements, and a data length that differs
// from the shape's are each an INVALID_ARGUMENT naming the file.
//
// Stateless functions; thread-safe.
#ifndef SLUICE_NPY_H_
#define SLUICE_NPY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sluice/tensor.h"

namespace sluice {

// Reads a .npy file into a new host tensor. NOT_FOUND when the file cannot
// be opened.
absl::StatusOr<Tensor> ReadNpy(const std::string& path);
// Parses the bytes of a .npy file; `name` is used in error messages.
absl::StatusOr<Tensor> ParseNpy(absl::string_view bytes,
                                absl::string_view name = "<npy>");

// The bytes of a .npy file holding `t`. REQUIRES nothing: an invalid or
// device tensor is an error.
absl::StatusOr<std::string> SerializeNpy(const Tensor& t);
// Writes SerializeNpy(t) to `path` (replacing it).
absl::Status WriteNpy(const Tensor& t, const std::string& path);

// The dtype NumPy will see for a tensor of `dtype` written by WriteNpy
// (DT_FLOAT for bfloat16, float8 and float4, DT_INT8 for int4 and int2,
// DT_UINT8 for uint4 and uint2, otherwise the same).
DataType NpyWrittenType(DataType dtype);

}  // namespace sluice

#endif  // SLUICE_NPY_H_
