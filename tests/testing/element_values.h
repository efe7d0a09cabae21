// One element of any dtype to and from double, for tests that build
// tensors from lists of doubles and read them back (kernel_test_util's
// MakeTensor / ToDoubles, the .npy round trips):
//
//   p[i] = testing::FromDouble<T>(values[i]);   // inside SLUICE_SWITCH_DTYPE
//   out.push_back(testing::ToDouble(p[i]));
//
// Templates, so that `if constexpr` discards the branches a dtype cannot
// compile. Stateless; safe from any thread.
#ifndef SLUICE_TESTS_TESTING_ELEMENT_VALUES_H_
#define SLUICE_TESTS_TESTING_ELEMENT_VALUES_H_

#include <type_traits>

#include "core/dtype.h"

namespace sluice::testing {

template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    return static_cast<T>(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

template <typename T>
double ToDouble(T v) {
  if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    return static_cast<float>(v);
  } else {
    return static_cast<double>(v);
  }
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_ELEMENT_VALUES_H_
