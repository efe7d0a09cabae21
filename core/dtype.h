// Element types inside sluice: the public part (sizes, names, the C++ types
// of the standard dtypes) is sluice/dtype.h; this header adds Eigen's half and
// bfloat16 for float16 and bfloat16, the small types of core/small_types.h
// (float8, float4, int4, uint4, int2, uint2), and SLUICE_SWITCH_DTYPE.
//
//   SLUICE_SWITCH_DTYPE(t.dtype(), { Fill<T>(t); }, return Unsupported());
//
// Pure functions; thread-safe.
#ifndef SLUICE_CORE_DTYPE_H_
#define SLUICE_CORE_DTYPE_H_

#include <string>

#include "Eigen/Core"
#include "absl/types/span.h"
#include "core/small_types.h"  // IWYU pragma: export
#include "sluice/dtype.h"  // IWYU pragma: export

namespace sluice {

using half = Eigen::half;
using bfloat16 = Eigen::bfloat16;

template <> struct DataTypeToCpp<DT_FLOAT16> { using type = half; };
template <> struct DataTypeToCpp<DT_BFLOAT16> { using type = bfloat16; };
template <> constexpr DataType CppToDataType<half>() { return DT_FLOAT16; }
template <> constexpr DataType CppToDataType<bfloat16>() { return DT_BFLOAT16; }

#define SLUICE_SMALL_DTYPE(D, CPP)                                 \
  template <> struct DataTypeToCpp<D> { using type = CPP; };      \
  template <> constexpr DataType CppToDataType<CPP>() { return D; }
SLUICE_SMALL_DTYPE(DT_FLOAT8_E4M3FN, float8_e4m3fn)
SLUICE_SMALL_DTYPE(DT_FLOAT8_E4M3FNUZ, float8_e4m3fnuz)
SLUICE_SMALL_DTYPE(DT_FLOAT8_E5M2, float8_e5m2)
SLUICE_SMALL_DTYPE(DT_FLOAT8_E5M2FNUZ, float8_e5m2fnuz)
SLUICE_SMALL_DTYPE(DT_FLOAT8_E8M0, float8_e8m0)
SLUICE_SMALL_DTYPE(DT_FLOAT4_E2M1, float4_e2m1)
SLUICE_SMALL_DTYPE(DT_INT4, int4)
SLUICE_SMALL_DTYPE(DT_UINT4, uint4)
SLUICE_SMALL_DTYPE(DT_INT2, int2)
SLUICE_SMALL_DTYPE(DT_UINT2, uint2)
#undef SLUICE_SMALL_DTYPE

// The dtypes' names joined with ", " (for messages): "float32, int64".
std::string DataTypeNames(absl::Span<const DataType> dtypes);

}  // namespace sluice

// Calls BODY with `T` bound to the C++ type of DTYPE, for every dtype. Unknown
// dtypes run DEFAULT. Use inside a function body:
//   SLUICE_SWITCH_DTYPE(t.dtype(), { Fill<T>(t); }, return Unsupported());
// The small types (float8, float4, int4, ...) convert explicitly to and from
// every arithmetic type and do arithmetic through float (or int64).
#define SLUICE_SWITCH_DTYPE(DTYPE, BODY, DEFAULT)                   \
  switch (DTYPE) {                                                  \
    case ::sluice::DT_FLOAT: { using T = float; BODY; break; }     \
    case ::sluice::DT_FLOAT16: { using T = ::sluice::half; BODY; break; } \
    case ::sluice::DT_BFLOAT16: { using T = ::sluice::bfloat16; BODY; break; } \
    case ::sluice::DT_DOUBLE: { using T = double; BODY; break; }   \
    case ::sluice::DT_INT8: { using T = int8_t; BODY; break; }     \
    case ::sluice::DT_INT16: { using T = int16_t; BODY; break; }   \
    case ::sluice::DT_INT32: { using T = int32_t; BODY; break; }   \
    case ::sluice::DT_INT64: { using T = int64_t; BODY; break; }   \
    case ::sluice::DT_UINT8: { using T = uint8_t; BODY; break; }   \
    case ::sluice::DT_UINT16: { using T = uint16_t; BODY; break; } \
    case ::sluice::DT_UINT32: { using T = uint32_t; BODY; break; } \
    case ::sluice::DT_UINT64: { using T = uint64_t; BODY; break; } \
    case ::sluice::DT_BOOL: { using T = bool; BODY; break; }       \
    case ::sluice::DT_FLOAT8_E4M3FN: { using T = ::sluice::float8_e4m3fn; BODY; break; } \
    case ::sluice::DT_FLOAT8_E4M3FNUZ: { using T = ::sluice::float8_e4m3fnuz; BODY; break; } \
    case ::sluice::DT_FLOAT8_E5M2: { using T = ::sluice::float8_e5m2; BODY; break; } \
    case ::sluice::DT_FLOAT8_E5M2FNUZ: { using T = ::sluice::float8_e5m2fnuz; BODY; break; } \
    case ::sluice::DT_FLOAT8_E8M0: { using T = ::sluice::float8_e8m0; BODY; break; } \
    case ::sluice::DT_FLOAT4_E2M1: { using T = ::sluice::float4_e2m1; BODY; break; } \
    case ::sluice::DT_INT4: { using T = ::sluice::int4; BODY; break; }   \
    case ::sluice::DT_UINT4: { using T = ::sluice::uint4; BODY; break; } \
    case ::sluice::DT_INT2: { using T = ::sluice::int2; BODY; break; }   \
    case ::sluice::DT_UINT2: { using T = ::sluice::uint2; BODY; break; } \
    default: { DEFAULT; }                                           \
  }

#endif  // SLUICE_CORE_DTYPE_H_
