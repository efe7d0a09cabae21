// The one comparator of sluice's tests: whether a computed value matches the
// expected one, and the tolerance a dtype and a reduction length earn.
//
//   Rules, in order (Mismatch):
//   1. Integer and bool dtypes match exactly, whatever the tolerance.
//   2. NaN matches only NaN (a NaN never matches a number, and a number never
//      matches a NaN).
//   3. An infinity matches only the infinity of the same sign (a finite value
//      never matches an infinity, however wide the tolerance).
//   4. Finite values match when |got - want| <= tol.abs + tol.rel * |want|.
//
//   Tolerance tol = DtypeTolerance(DT_FLOAT, /*reduction_length=*/k);
//   EXPECT_EQ(CompareValues(got, want, DT_FLOAT, tol), "") << "MatMul";
//
// DtypeTolerance's formula. With eps the dtype's machine epsilon (the gap
// between 1 and the next value: 2^-23 float32, 2^-52 float64, 2^-10 float16
// and TF32, 2^-7 bfloat16, 2^-3 float8 E4M3, 2^-2 float8 E5M2, 2^-1 float4)
// and n the number of rounded terms a result sums (1 for an elementwise op,
// K for a K-term dot product),
//
//   rel = ulps * eps * n          abs = rel * scale
//
// so |got - want| <= ulps * eps * n * (scale + |want|). Each of the two
// implementations compared rounds every one of its n accumulations by at most
// eps / 2 of the running sum (the classic n * u bound, u = eps / 2), so two
// correct ones differ by at most n * eps of the partial sums' magnitude,
// which `scale` stands for where |want| underestimates it (cancellation); an
// elementwise result depends only on |want| (scale 0). `ulps` covers what an
// implementation may lose beyond one rounding per term (a libm function
// within a few ulps, a conversion in and out of a wider type): 2 unless a
// caller says why it needs more.
//
// Header-only, no GoogleTest (the node-suite runner uses it too).
// Thread-safe: pure functions.
#ifndef SLUICE_TESTS_TESTING_COMPARE_H_
#define SLUICE_TESTS_TESTING_COMPARE_H_

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "core/dtype.h"

namespace sluice::testing {

// |got - want| <= abs + rel * |want| for finite values.
struct Tolerance {
  double abs = 0;
  double rel = 0;
};

inline constexpr Tolerance kExact = {0, 0};

// Integer and bool dtypes (and int4/uint4/int2/uint2): compared exactly.
inline bool IsExactDtype(DataType dtype) {
  switch (dtype) {
    case DT_BOOL: case DT_INT8: case DT_INT16: case DT_INT32: case DT_INT64:
    case DT_UINT8: case DT_UINT16: case DT_UINT32: case DT_UINT64:
    case DT_INT4: case DT_UINT4: case DT_INT2: case DT_UINT2:
      return true;
    default:
      return false;
  }
}

// The gap between 1 and the next representable value; 0 for exact dtypes.
// float8 E8M0 holds powers of two only: its gap at 1 is 1.
inline double MachineEpsilon(DataType dtype) {
  switch (dtype) {
    case DT_DOUBLE: return std::ldexp(1.0, -52);
    case DT_FLOAT: return std::ldexp(1.0, -23);
    case DT_FLOAT16: return std::ldexp(1.0, -10);
    case DT_BFLOAT16: return std::ldexp(1.0, -7);
    case DT_FLOAT8_E4M3FN: case DT_FLOAT8_E4M3FNUZ: return std::ldexp(1.0, -3);
    case DT_FLOAT8_E5M2: case DT_FLOAT8_E5M2FNUZ: return std::ldexp(1.0, -2);
    case DT_FLOAT4_E2M1: return std::ldexp(1.0, -1);
    case DT_FLOAT8_E8M0: return 1.0;
    default: return 0;
  }
}

// TF32 (float32 with 10 mantissa bits in the multiplier): float16's epsilon.
inline double Tf32Epsilon() { return std::ldexp(1.0, -10); }

// rel = ulps * eps * n, abs = rel * scale (the formula above). Exact dtypes
// get kExact.
inline Tolerance ToleranceFromEpsilon(double eps, int64_t reduction_length = 1,
                                      double scale = 1, double ulps = 2) {
  const double n = reduction_length < 1 ? 1.0 : static_cast<double>(reduction_length);
  const double rel = ulps * eps * n;
  return {rel * scale, rel};
}
inline Tolerance DtypeTolerance(DataType dtype, int64_t reduction_length = 1,
                                double scale = 1, double ulps = 2) {
  if (IsExactDtype(dtype)) return kExact;
  return ToleranceFromEpsilon(MachineEpsilon(dtype), reduction_length, scale, ulps);
}

// The old "tol * (1 + |want|)" form, by name: abs = rel = r.
inline Tolerance RelativeAndAbsolute(double r) { return {r, r}; }

// "" when `got` matches `want` by the rules above, else why not. Integral
// T compares exactly; floating T (double, float) by class and tolerance.
template <typename T>
std::string Mismatch(T got, T want, Tolerance tol) {
  std::ostringstream why;
  if constexpr (std::is_integral_v<T>) {
    if (got == want) return "";
    why << +got << ", expected exactly " << +want;
    return why.str();
  } else {
    const bool got_nan = std::isnan(got);
    const bool want_nan = std::isnan(want);
    if (got_nan || want_nan) {
      if (got_nan && want_nan) return "";
      why << got << ", expected " << want << " (NaN matches only NaN)";
      return why.str();
    }
    if (std::isinf(got) || std::isinf(want)) {
      if (got == want) return "";
      why << got << ", expected " << want
          << " (an infinity matches only the same infinity)";
      return why.str();
    }
    const double diff = std::fabs(static_cast<double>(got) - static_cast<double>(want));
    const double bound = tol.abs + tol.rel * std::fabs(static_cast<double>(want));
    if (diff <= bound) return "";
    why.precision(9);
    why << got << ", expected " << want << " (|diff| " << diff << " > "
        << bound << " = " << tol.abs << " + " << tol.rel << " * |expected|)";
    return why.str();
  }
}

// Element by element; "" when all match, else the first `max_reported`
// mismatches ("element i: ...", one per line) and how many there were.
// A size difference is a mismatch.
template <typename T>
std::string CompareTyped(const std::vector<T>& got, const std::vector<T>& want,
                         Tolerance tol, int max_reported = 5) {
  if (got.size() != want.size()) {
    return "got " + std::to_string(got.size()) + " values, expected " +
           std::to_string(want.size());
  }
  std::string out;
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string why = Mismatch<T>(got[i], want[i], tol);
    if (why.empty()) continue;
    if (bad++ < max_reported) out += "element " + std::to_string(i) + ": " + why + "\n";
  }
  if (bad > max_reported) {
    out += "... " + std::to_string(bad) + " of " + std::to_string(want.size()) +
           " elements differ\n";
  }
  return out;
}

// The same for values read as doubles from tensors of `dtype` (kernel tests'
// ToDoubles): exact dtypes ignore `tol`.
inline std::string CompareValues(const std::vector<double>& got,
                                 const std::vector<double>& want,
                                 DataType dtype, Tolerance tol,
                                 int max_reported = 5) {
  return CompareTyped<double>(got, want, IsExactDtype(dtype) ? kExact : tol,
                              max_reported);
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_TESTING_COMPARE_H_
