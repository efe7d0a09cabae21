// Dtype visitors that follow the dtype list (SLUICE_SWITCH_DTYPE) instead of
// naming dtypes, so the kernels built on them take every new dtype of the
// family: the standard integers (int8 to int64, uint8 to uint64) and the
// ordered types (those integers and the four IEEE-style floats), with the
// dtype lists to register the kernels for.
//
//   r->Register(CpuKernel("BitShift", {{"T", StdIntegerTypes()}}, ...));
//   return VisitStdInteger(x.dtype(), [&](auto tag) -> absl::Status {
//     using T = typename decltype(tag)::type;  ...
//   });
//
// Stateless; thread-safe.
#ifndef SLUICE_KERNELS_CPU_TYPE_VISIT_H_
#define SLUICE_KERNELS_CPU_TYPE_VISIT_H_

#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "core/dtype.h"
#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {

template <typename T>
inline constexpr bool kIsStdInteger =
    std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Integers, float, double, float16 and bfloat16: what sorts and compares.
template <typename T>
inline constexpr bool kIsOrdered =
    kIsStdInteger<T> || std::is_floating_point_v<T> ||
    std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

// Calls f(TypeTag<T>{}) when `dtype`'s C++ type T is a standard integer;
// UNIMPLEMENTED naming the dtype otherwise.
template <typename F>
absl::Status VisitStdInteger(DataType dtype, F&& f) {
  absl::Status status = UnsupportedDtype(dtype);
  SLUICE_SWITCH_DTYPE(dtype, {
    if constexpr (kIsStdInteger<T>) status = f(TypeTag<T>{});
  }, {});
  return status;
}

// The same for the ordered types.
template <typename F>
absl::Status VisitOrdered(DataType dtype, F&& f) {
  absl::Status status = UnsupportedDtype(dtype);
  SLUICE_SWITCH_DTYPE(dtype, {
    if constexpr (kIsOrdered<T>) status = f(TypeTag<T>{});
  }, {});
  return status;
}

// The dtypes each visitor takes, in enum order.
const std::vector<DataType>& StdIntegerTypes();
const std::vector<DataType>& OrderedTypes();

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_TYPE_VISIT_H_
