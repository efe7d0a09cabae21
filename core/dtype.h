// Element types inside sluice: the public part (sizes, names, the C++ types
// of the standard dtypes) is sluice/dtype.h; this header adds Eigen's half and
// bfloat16 for float16 and bfloat16, and SLUICE_SWITCH_DTYPE.
//
//   SLUICE_SWITCH_DTYPE(t.dtype(), { Fill<T>(t); }, return Unsupported());
//
// Pure functions; thread-safe.
#ifndef SLUICE_CORE_DTYPE_H_
#define SLUICE_CORE_DTYPE_H_

#include "Eigen/Core"
#include "sluice/dtype.h"  // IWYU pragma: export

namespace sluice {

using half = Eigen::half;
using bfloat16 = Eigen::bfloat16;

template <> struct DataTypeToCpp<DT_FLOAT16> { using type = half; };
template <> struct DataTypeToCpp<DT_BFLOAT16> { using type = bfloat16; };
template <> constexpr DataType CppToDataType<half>() { return DT_FLOAT16; }
template <> constexpr DataType CppToDataType<bfloat16>() { return DT_BFLOAT16; }

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
