// The tests' one comparator (tests/testing/compare.h) fails where a wrong
// value could otherwise pass: NaN against a number, an infinity against a
// finite value or the other infinity, integers one apart; and passes at its
// stated tolerance.
#include "testing/compare.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::testing::compare_test {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
// Wider than any test uses: the class rules must hold whatever the tolerance.
constexpr Tolerance kHuge = {1e300, 1e300};

TEST(CompareTest, NanAgainstANumberFailsBothWaysWhateverTheTolerance) {
  EXPECT_THAT(Mismatch(kNan, 1.0, kHuge), HasSubstr("NaN matches only NaN"));
  EXPECT_THAT(Mismatch(1.0, kNan, kHuge), HasSubstr("NaN matches only NaN"));
  EXPECT_THAT(Mismatch(kNan, kInf, kHuge), Not(IsEmpty()));
  EXPECT_THAT(Mismatch(std::nanf(""), 0.0f, Tolerance{1e30, 1e30}), Not(IsEmpty()));
}

TEST(CompareTest, NanMatchesNan) {
  EXPECT_THAT(Mismatch(kNan, -kNan, kExact), IsEmpty());
  EXPECT_THAT(CompareValues({1, kNan}, {1, kNan}, DT_FLOAT, kExact), IsEmpty());
}

TEST(CompareTest, InfinityAgainstAFiniteValueFailsWhateverTheTolerance) {
  // The old form |g - w| <= rtol * (1 + |w|) accepted any g for w = inf.
  EXPECT_THAT(Mismatch(3.0, kInf, kHuge),
              HasSubstr("an infinity matches only the same infinity"));
  EXPECT_THAT(Mismatch(kInf, 3.0, kHuge), Not(IsEmpty()));
  EXPECT_THAT(Mismatch(std::numeric_limits<double>::max(), kInf, kHuge),
              Not(IsEmpty()));
}

TEST(CompareTest, WrongSignOfInfinityFails) {
  EXPECT_THAT(Mismatch(-kInf, kInf, kHuge), Not(IsEmpty()));
  EXPECT_THAT(Mismatch(kInf, -kInf, kHuge), Not(IsEmpty()));
  EXPECT_THAT(Mismatch(kInf, kInf, kExact), IsEmpty());
  EXPECT_THAT(Mismatch(-kInf, -kInf, kExact), IsEmpty());
}

TEST(CompareTest, IntegersOneApartFailWhateverTheTolerance) {
  EXPECT_THAT(Mismatch<int64_t>(41, 42, kHuge), HasSubstr("expected exactly 42"));
  // Beyond 2^53, where doubles cannot tell the two apart.
  const int64_t big = (int64_t{1} << 60) + 1;
  EXPECT_THAT(Mismatch<int64_t>(big, big + 1, kHuge), Not(IsEmpty()));
  EXPECT_THAT(Mismatch<uint8_t>(7, 7, kExact), IsEmpty());
  EXPECT_THAT(Mismatch<int8_t>(-1, 1, kHuge), HasSubstr("-1, expected exactly 1"));
  // Values of an integer tensor read as doubles: the dtype makes them exact.
  for (DataType t : {DT_INT32, DT_INT64, DT_UINT8, DT_BOOL, DT_INT4}) {
    EXPECT_THAT(CompareValues({1, 5}, {1, 6}, t, kHuge), Not(IsEmpty()))
        << DataTypeName(t);
    EXPECT_THAT(CompareValues({1, 6}, {1, 6}, t, kExact), IsEmpty());
  }
}

TEST(CompareTest, FiniteValuesPassAtTheToleranceAndFailJustPastIt) {
  const Tolerance tol = {1e-3, 1e-2};
  // Bound at want = 10: 1e-3 + 1e-2 * 10 = 0.101.
  EXPECT_THAT(Mismatch(10.1, 10.0, tol), IsEmpty());
  EXPECT_THAT(Mismatch(9.9, 10.0, tol), IsEmpty());
  EXPECT_THAT(Mismatch(10.102, 10.0, tol), HasSubstr("> 0.101"));
  EXPECT_THAT(Mismatch(9.898, 10.0, tol), Not(IsEmpty()));
  // At want = 0 only abs is left.
  EXPECT_THAT(Mismatch(0.0009, 0.0, tol), IsEmpty());
  EXPECT_THAT(Mismatch(0.0011, 0.0, tol), Not(IsEmpty()));
}

TEST(CompareTest, DtypeToleranceIsUlpsTimesEpsilonTimesLength) {
  const Tolerance f = DtypeTolerance(DT_FLOAT);
  EXPECT_EQ(f.rel, 2 * std::ldexp(1.0, -23));
  EXPECT_EQ(f.abs, f.rel);  // scale 1
  const Tolerance k = DtypeTolerance(DT_BFLOAT16, 64, 0.5, 3);
  EXPECT_EQ(k.rel, 3 * std::ldexp(1.0, -7) * 64);
  EXPECT_EQ(k.abs, k.rel * 0.5);
  EXPECT_EQ(DtypeTolerance(DT_FLOAT16, 1, 0).abs, 0);
  EXPECT_EQ(DtypeTolerance(DT_INT32, 1000).rel, 0);
  EXPECT_EQ(MachineEpsilon(DT_DOUBLE), std::numeric_limits<double>::epsilon());
  EXPECT_EQ(MachineEpsilon(DT_FLOAT), std::numeric_limits<float>::epsilon());
}

TEST(CompareTest, OneRoundingOfFloat32PassesAndTwentyFail) {
  const Tolerance tol = DtypeTolerance(DT_FLOAT, 1, 0);  // 2 eps relative
  const float want = 1.5f;
  const float one_ulp = std::nextafter(want, 2.0f);
  float twenty = want;
  for (int i = 0; i < 20; ++i) twenty = std::nextafter(twenty, 2.0f);
  EXPECT_THAT(Mismatch<double>(one_ulp, want, tol), IsEmpty());
  EXPECT_THAT(Mismatch<double>(twenty, want, tol), Not(IsEmpty()));
}

TEST(CompareTest, CompareValuesReportsTheFirstMismatchesAndTheirCount) {
  std::vector<double> want(10, 1.0), got(10, 1.0);
  for (int i = 2; i < 10; ++i) got[i] = 2.0;
  const std::string report = CompareValues(got, want, DT_FLOAT, kExact, 3);
  EXPECT_THAT(report, HasSubstr("element 2: 2, expected 1"));
  EXPECT_THAT(report, HasSubstr("element 4:"));
  EXPECT_THAT(report, Not(HasSubstr("element 5:")));
  EXPECT_THAT(report, HasSubstr("8 of 10 elements differ"));
  EXPECT_THAT(CompareValues({1, 2}, {1}, DT_FLOAT, kHuge),
              HasSubstr("got 2 values, expected 1"));
}

}  // namespace
}  // namespace sluice::testing::compare_test
