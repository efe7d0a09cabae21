// kernels/cpu/wide_sums.h: every length through a few lanes' worth, sums
// and squared distances exact on integer values, the tail past the last
// whole group of lanes counted, a NaN carried through, and 16-bit floats
// widened through their compute type.
#include "kernels/cpu/wide_sums.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "gtest/gtest.h"

namespace sluice::cpu::wide_sums_test {
namespace {

TEST(WideSumsTest, SumsAndSquaredDistancesAreExactAtEveryLength) {
  for (int64_t n = 0; n <= 4 * kWideLanes + 3; ++n) {
    SCOPED_TRACE(::testing::Message() << "n " << n);
    std::vector<float> x(n);
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>((i * 7) % 13) - 6.0f;
      sum += x[i];
      sq += (x[i] - 0.5) * (x[i] - 0.5);
    }
    EXPECT_EQ(WideSum(x.data(), n), sum);
    EXPECT_EQ(WideSquaredDistance(x.data(), n, 0.5), sq);
  }
}

TEST(WideSumsTest, ANanAnywhereIsCarriedThrough) {
  for (int64_t at : {0, 5, kWideLanes + 2}) {
    std::vector<float> x(2 * kWideLanes + 3, 1.0f);
    x[at] = std::nanf("");
    EXPECT_TRUE(std::isnan(WideSum(x.data(), x.size()))) << at;
    EXPECT_TRUE(std::isnan(WideSquaredDistance(x.data(), x.size(), 0.0))) << at;
  }
}

TEST(WideSumsTest, SixteenBitFloatsAreWidened) {
  std::vector<bfloat16> x = {bfloat16(1.5f), bfloat16(-2.0f), bfloat16(0.25f)};
  EXPECT_EQ(WideSum(x.data(), 3), -0.25);
  EXPECT_EQ(WideSquaredDistance(x.data(), 3, 0.0), 2.25 + 4.0 + 0.0625);
}

}  // namespace
}  // namespace sluice::cpu::wide_sums_test
