// Element types: sizes, names and the C++ types behind them. DataType is the
// enum of proto/types.proto (DT_FLOAT, DT_INT64, ...).
//
//   size_t bytes = sluice::DataTypeSize(sluice::DT_FLOAT);        // 4
//   std::string name = sluice::DataTypeName(sluice::DT_BFLOAT16); // "bfloat16"
//   absl::StatusOr<sluice::DataType> t = sluice::ParseDataType("int64");
//
// The C++ types of float16, bfloat16 (Eigen's half and bfloat16), the float8
// types, float4 and the 4- and 2-bit integers are not part of the public
// headers: tensors of those dtypes are read and written through raw_data().
// The 4- and 2-bit types take one byte per element in memory (the value in
// the low bits, sign-extended for int4 and int2).
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

// Bytes per element in memory; 0 for DT_INVALID. 1 for the 4- and 2-bit
// types, which only ONNX files pack.
size_t DataTypeSize(DataType dtype);
// Bits of information per element: 4 for float4 E2M1, int4 and uint4, 2 for
// int2 and uint2, 8 * DataTypeSize otherwise.
int DataTypeBits(DataType dtype);
// "float32", "float16", "bfloat16", "float64", "int8", "int16", "int32",
// "int64", "uint8", "uint16", "uint32", "uint64", "bool", "float8_e4m3fn",
// "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
// "float4_e2m1fn", "int4", "uint4", "int2", "uint2" (numpy / ml_dtypes
// names); "invalid" otherwise.
std::string DataTypeName(DataType dtype);
// Accepts the names above, plus "float", "double", "half", the enum
// spellings ("DT_FLOAT", "DT_FLOAT8_E4M3FN") and ONNX's ("float8e4m3fn",
// "float8e8m0", "float4e2m1"), in any case.
absl::StatusOr<DataType> ParseDataType(std::string_view name);
// Every valid dtype, in enum order.
const std::vector<DataType>& AllDataTypes();

// float16, bfloat16, float32, float64, the float8 types and float4 E2M1.
bool IsFloatingPoint(DataType dtype);
// int8/16/32/64, uint8/16/32/64, int4, uint4, int2, uint2.
bool IsInteger(DataType dtype);
bool IsSignedInteger(DataType dtype);
// The float8 types and float4 E2M1: stored only, converted with Cast and
// QuantizeLinear / DequantizeLinear.
bool IsSmallFloat(DataType dtype);
// int4, uint4, int2, uint2, float4 E2M1.
bool IsSubByte(DataType dtype);

// The C++ type of a dtype, and back. sluice's own code adds float16,
// bfloat16 and the small types (core/dtype.h).
template <DataType D> struct DataTypeToCpp;
template <> struct DataTypeToCpp<DT_FLOAT> { using type = float; };
template <> struct DataTypeToCpp<DT_DOUBLE> { using type = double; };
template <> struct DataTypeToCpp<DT_INT8> { using type = int8_t; };
template <> struct DataTypeToCpp<DT_INT32> { using type = int32_t; };
template <> struct DataTypeToCpp<DT_INT64> { using type = int64_t; };
template <> struct DataTypeToCpp<DT_UINT8> { using type = uint8_t; };
template <> struct DataTypeToCpp<DT_INT16> { using type = int16_t; };
template <> struct DataTypeToCpp<DT_UINT16> { using type = uint16_t; };
template <> struct DataTypeToCpp<DT_UINT32> { using type = uint32_t; };
template <> struct DataTypeToCpp<DT_UINT64> { using type = uint64_t; };
template <> struct DataTypeToCpp<DT_BOOL> { using type = bool; };

template <typename T> constexpr DataType CppToDataType();
template <> constexpr DataType CppToDataType<float>() { return DT_FLOAT; }
template <> constexpr DataType CppToDataType<double>() { return DT_DOUBLE; }
template <> constexpr DataType CppToDataType<int8_t>() { return DT_INT8; }
template <> constexpr DataType CppToDataType<int32_t>() { return DT_INT32; }
template <> constexpr DataType CppToDataType<int64_t>() { return DT_INT64; }
template <> constexpr DataType CppToDataType<uint8_t>() { return DT_UINT8; }
template <> constexpr DataType CppToDataType<int16_t>() { return DT_INT16; }
template <> constexpr DataType CppToDataType<uint16_t>() { return DT_UINT16; }
template <> constexpr DataType CppToDataType<uint32_t>() { return DT_UINT32; }
template <> constexpr DataType CppToDataType<uint64_t>() { return DT_UINT64; }
template <> constexpr DataType CppToDataType<bool>() { return DT_BOOL; }

}  // namespace sluice

#endif  // SLUICE_DTYPE_H_
