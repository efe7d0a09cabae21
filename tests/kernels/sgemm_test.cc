// kernels/cpu/sgemm.h: one serial product on sub-matrices (leading
// dimensions wider than the extents, as gemm.h's tiles pass them) matches a
// naive double-precision product for every transpose, writes exactly C's
// m x n elements, and overwrites (not accumulates into) them.
#include "kernels/cpu/sgemm.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sluice::cpu::sgemm_test {
namespace {

struct Case {
  int64_t m, n, k;
};

// Seeded, deterministic values in [-1, 1].
std::vector<float> Values(int64_t count, int seed) {
  std::vector<float> v(count);
  for (int64_t i = 0; i < count; ++i) {
    v[i] = static_cast<float>(((i * 7 + seed * 13) % 17) - 8) / 8.0f;
  }
  return v;
}

void Check(const Case& s, bool ta, bool tb) {
  SCOPED_TRACE(::testing::Message() << s.m << "x" << s.n << "x" << s.k
                                    << " ta " << ta << " tb " << tb);
  // Each operand is a window of a wider matrix: 3 spare columns per row.
  const int64_t a_rows = ta ? s.k : s.m, a_cols = ta ? s.m : s.k;
  const int64_t b_rows = tb ? s.n : s.k, b_cols = tb ? s.k : s.n;
  const int64_t lda = a_cols + 3, ldb = b_cols + 3, ldc = s.n + 3;
  const std::vector<float> a = Values(a_rows * lda, 1);
  const std::vector<float> b = Values(b_rows * ldb, 2);
  // C starts as 5 inside (must be overwritten) and NaN outside (must stay).
  std::vector<float> c(s.m * ldc, std::nanf(""));
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) c[i * ldc + j] = 5.0f;
  }
  Sgemm(ta, tb, s.m, s.n, s.k, a.data(), lda, b.data(), ldb, c.data(), ldc);
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      if (j >= s.n) {
        ASSERT_TRUE(std::isnan(c[i * ldc + j])) << "wrote past C at " << i
                                                << "," << j;
        continue;
      }
      double want = 0;
      for (int64_t p = 0; p < s.k; ++p) {
        want += static_cast<double>(ta ? a[p * lda + i] : a[i * lda + p]) *
                static_cast<double>(tb ? b[j * ldb + p] : b[p * ldb + j]);
      }
      ASSERT_NEAR(c[i * ldc + j], want, 1e-4 * (1 + std::abs(want)))
          << "at " << i << "," << j;
    }
  }
}

TEST(SgemmTest, StridedWindowsMatchNaiveForEveryTranspose) {
  const Case cases[] = {{1, 1, 1},     {3, 5, 7},     {1, 1000, 64},
                        {100, 1, 33},  {37, 101, 13}, {32, 264, 1152},
                        {64, 49, 300}, {9, 17, 0},    {24, 16, 1},
                        {5, 97, 31},   {3, 145, 2}};  // 48q + 1 columns
  for (const Case& s : cases) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) Check(s, ta, tb);
    }
  }
}

TEST(SgemmTest, UsesOneDnnExactlyWhenBuiltWithIt) {
#if SLUICE_TEST_HAVE_ONEDNN
  EXPECT_TRUE(SgemmUsesOneDnn());
#else
  EXPECT_FALSE(SgemmUsesOneDnn());
#endif
}

}  // namespace
}  // namespace sluice::cpu::sgemm_test
