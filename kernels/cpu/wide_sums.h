// Sums of a row in double for the normalisations (LayerNorm, RMSNorm): the
// row's values, and the squares of their distances from a centre. Eight
// accumulators, each summing every eighth value in order, then added in
// lane order: the compiler vectorises them without reassociating anything
// itself, where one running sum costs an add's latency a value (about a
// nanosecond; RMSNorm took 1.4 ms of a 18 ms Llama step at two threads).
// The order is fixed, so results do not change from run to run.
//
//   const double mean = WideSum(x, n) / n;
//   const double var = WideSquaredDistance(x, n, mean) / n;
#ifndef SLUICE_KERNELS_CPU_WIDE_SUMS_H_
#define SLUICE_KERNELS_CPU_WIDE_SUMS_H_

#include <cstdint>

#include "kernels/cpu/kernel_util.h"

namespace sluice::cpu {

inline constexpr int kWideLanes = 8;

// The sum over x[0, n) of (x[i] - centre)^2 with square = true, or of
// x[i] - centre with square = false, each value widened to double through
// the dtype's compute type.
template <bool kSquare, typename T>
double WideLaneSum(const T* x, int64_t n, double centre) {
  using C = typename ComputeType<T>::type;
  double lane[kWideLanes] = {};
  int64_t i = 0;
  for (; i + kWideLanes <= n; i += kWideLanes) {
    for (int l = 0; l < kWideLanes; ++l) {
      const double d = static_cast<double>(static_cast<C>(x[i + l])) - centre;
      lane[l] += kSquare ? d * d : d;
    }
  }
  for (int l = 0; i < n; ++i, ++l) {
    const double d = static_cast<double>(static_cast<C>(x[i])) - centre;
    lane[l] += kSquare ? d * d : d;
  }
  double sum = 0;
  for (int l = 0; l < kWideLanes; ++l) sum += lane[l];
  return sum;
}

template <typename T>
double WideSum(const T* x, int64_t n) {
  return WideLaneSum<false>(x, n, 0.0);
}

template <typename T>
double WideSquaredDistance(const T* x, int64_t n, double centre) {
  return WideLaneSum<true>(x, n, centre);
}

}  // namespace sluice::cpu

#endif  // SLUICE_KERNELS_CPU_WIDE_SUMS_H_
