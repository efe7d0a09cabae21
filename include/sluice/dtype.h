// Element types: sizes, names and the C++ types behind them. DataType is the
// enum of proto/types.proto (DT_FLOAT, DT_INT64, ...).
//
//   size_t bytes = sluice::DataTypeSize(sluice::DT_FLOAT);        // 4
//   std::string name = sluice::DataTypeName(sluice::DT_BFLOAT16); // "bfloat16"
//   absl::StatusOr<sluice::DataType> t = sluice::ParseDataType("int64");
//
// The C++ types of float16 and bfloat16 (Eigen's half and bfloat16) are not
// part of the public headers: tensors of those dtypes are read and written
// through raw_data().
//
// Pure functions; thread-safe.
#ifndef SLUICE_DTYPE_H_
#define SLUICE_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "sluice/proto/types.pb.h"  // IWYU pragma: export

namespace sluice {

// Bytes per element; 0 for DT_INVALID.
size_t DataTypeSize(DataType dtype);
// "float32", "float16", "bfloat16", "float64", "int8", "int32", "int64",
// "uint8", "bool"; "invalid" otherwise.
std::string DataTypeName(DataType dtype);
// Accepts the names above, plus "float", "double", "half" and the enum
// spellings ("DT_FLOAT").
absl::StatusOr<DataType> ParseDataType(std::string_view name);
// Every valid dtype, in enum order.
const std::vector<DataType>& AllDataTypes();

bool IsFloatingPoint(DataType dtype);  // float16, bfloat16, float32, float64
bool IsInteger(DataType dtype);        // int8, int32, int64, uint8

// The C++ type of a dtype, and back. sluice's own code adds float16 and
// bfloat16 (core/dtype.h).
template <DataType D> struct DataTypeToCpp;
template <> struct DataTypeToCpp<DT_FLOAT> { using type = float; };
template <> struct DataTypeToCpp<DT_DOUBLE> { using type = double; };
template <> struct DataTypeToCpp<DT_INT8> { using type = int8_t; };
template <> struct DataTypeToCpp<DT_INT32> { using type = int32_t; };
template <> struct DataTypeToCpp<DT_INT64> { using type = int64_t; };
template <> struct DataTypeToCpp<DT_UINT8> { using type = uint8_t; };
template <> struct DataTypeToCpp<DT_BOOL> { using type = bool; };

template <typename T> constexpr DataType CppToDataType();
template <> constexpr DataType CppToDataType<float>() { return DT_FLOAT; }
template <> constexpr DataType CppToDataType<double>() { return DT_DOUBLE; }
template <> constexpr DataType CppToDataType<int8_t>() { return DT_INT8; }
template <> constexpr DataType CppToDataType<int32_t>() { return DT_INT32; }
template <> constexpr DataType CppToDataType<int64_t>() { return DT_INT64; }
template <> constexpr DataType CppToDataType<uint8_t>() { return DT_UINT8; }
template <> constexpr DataType CppToDataType<bool>() { return DT_BOOL; }

}  // namespace sluice

#endif  // SLUICE_DTYPE_H_
