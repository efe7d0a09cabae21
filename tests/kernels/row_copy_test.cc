// kernels/cpu/row_copy.h: every length from 0 past the short-run limit,
// at every alignment of a vector, copies or clears exactly [0, n) and
// nothing beyond it.
#include "kernels/cpu/row_copy.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace sluice::cpu::row_copy_test {
namespace {

TEST(RowCopyTest, CopiesExactlyTheRunAtEveryLengthAndAlignment) {
  for (int64_t offset = 0; offset < 8; ++offset) {
    for (int64_t n = 0; n <= 2 * kShortRow + 3; ++n) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " offset " << offset);
      std::vector<float> src(n + 16), dst(n + 16, std::nanf(""));
      for (int64_t i = 0; i < n + 16; ++i) src[i] = static_cast<float>(i + 1);
      CopyRow(src.data() + offset, n, dst.data() + offset);
      for (int64_t i = 0; i < n + 16; ++i) {
        if (i >= offset && i < offset + n) {
          ASSERT_EQ(dst[i], src[i]) << i;
        } else {
          ASSERT_TRUE(std::isnan(dst[i])) << "wrote outside the run at " << i;
        }
      }
    }
  }
}

TEST(RowCopyTest, ZeroesExactlyTheRunAtEveryLengthAndAlignment) {
  for (int64_t offset = 0; offset < 8; ++offset) {
    for (int64_t n = 0; n <= 2 * kShortRow + 3; ++n) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " offset " << offset);
      std::vector<float> dst(n + 16, 7.0f);
      ZeroRow(dst.data() + offset, n);
      for (int64_t i = 0; i < n + 16; ++i) {
        const bool inside = i >= offset && i < offset + n;
        ASSERT_EQ(dst[i], inside ? 0.0f : 7.0f) << i;
      }
    }
  }
}

}  // namespace
}  // namespace sluice::cpu::row_copy_test
