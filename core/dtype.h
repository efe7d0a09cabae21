// Element types: sizes, names and the C++ types behind them.
//
//   size_t bytes = DataTypeSize(DT_FLOAT);          // 4
//   std::string name = DataTypeName(DT_BFLOAT16);   // "bfloat16"
//   absl::StatusOr<DataType> t = ParseDataType("int64");
//
// Pure functions; thread-safe.
#ifndef SLUICE_CORE_DTYPE_H_
#define SLUICE_CORE_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "proto/types.pb.h"

namespace sluice {

using half = Eigen::half;
using bfloat16 = Eigen::bfloat16;

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

// The C++ type of a dtype, and back.
template <DataType D> struct DataTypeToCpp;
template <> struct DataTypeToCpp<DT_FLOAT> { using type = float; };
template <> struct DataTypeToCpp<DT_FLOAT16> { using type = half; };
template <> struct DataTypeToCpp<DT_BFLOAT16> { using type = bfloat16; };
template <> struct DataTypeToCpp<DT_DOUBLE> { using type = double; };
template <> struct DataTypeToCpp<DT_INT8> { using type = int8_t; };
template <> struct DataTypeToCpp<DT_INT32> { using type = int32_t; };
template <> struct DataTypeToCpp<DT_INT64> { using type = int64_t; };
template <> struct DataTypeToCpp<DT_UINT8> { using type = uint8_t; };
template <> struct DataTypeToCpp<DT_BOOL> { using type = bool; };

template <typename T> constexpr DataType CppToDataType();
template <> constexpr DataType CppToDataType<float>() { return DT_FLOAT; }
template <> constexpr DataType CppToDataType<half>() { return DT_FLOAT16; }
template <> constexpr DataType CppToDataType<bfloat16>() { return DT_BFLOAT16; }
template <> constexpr DataType CppToDataType<double>() { return DT_DOUBLE; }
template <> constexpr DataType CppToDataType<int8_t>() { return DT_INT8; }
template <> constexpr DataType CppToDataType<int32_t>() { return DT_INT32; }
template <> constexpr DataType CppToDataType<int64_t>() { return DT_INT64; }
template <> constexpr DataType CppToDataType<uint8_t>() { return DT_UINT8; }
template <> constexpr DataType CppToDataType<bool>() { return DT_BOOL; }

}  // namespace sluice

// Calls BODY with `T` bound to the C++ type of DTYPE. Unknown dtypes run
// DEFAULT. Use inside a function body:
//   SLUICE_SWITCH_DTYPE(t.dtype(), { Fill<T>(t); }, return Unsupported());
#define SLUICE_SWITCH_DTYPE(DTYPE, BODY, DEFAULT)                   \
  switch (DTYPE) {                                                  \
    case ::sluice::DT_FLOAT: { using T = float; BODY; break; }     \
    case ::sluice::DT_FLOAT16: { using T = ::sluice::half; BODY; break; } \
    case ::sluice::DT_BFLOAT16: { using T = ::sluice::bfloat16; BODY; break; } \
    case ::sluice::DT_DOUBLE: { using T = double; BODY; break; }   \
    case ::sluice::DT_INT8: { using T = int8_t; BODY; break; }     \
    case ::sluice::DT_INT32: { using T = int32_t; BODY; break; }   \
    case ::sluice::DT_INT64: { using T = int64_t; BODY; break; }   \
    case ::sluice::DT_UINT8: { using T = uint8_t; BODY; break; }   \
    case ::sluice::DT_BOOL: { using T = bool; BODY; break; }       \
    default: { DEFAULT; }                                           \
  }

#endif  // SLUICE_CORE_DTYPE_H_
