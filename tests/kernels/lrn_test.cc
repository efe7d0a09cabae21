// LRN on the CPU (kernels/cpu/lrn.cc): values worked out by hand for odd
// and even windows (an even size reaches one channel further up than down,
// as ONNX defines it), the 16-bit floats through float, and the refusals
// of its setup (kernels/normalization_params.h).
#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"
#include "kernels/normalization_params.h"

namespace sluice::testing::lrn_test {
namespace {

using ::testing::HasSubstr;

Attrs Lrn(float alpha, float beta, float bias, int64_t size) {
  return {{"alpha", FloatAttr(alpha)},
          {"beta", FloatAttr(beta)},
          {"bias", FloatAttr(bias)},
          {"size", IntAttr(size)}};
}

TEST(LrnKernelTest, OddWindowSumsTheChannelsOnBothSides) {
  // alpha / size = 1, beta = 1, bias = 1: y = x / (1 + sum of squares).
  auto y = RunOp("LRN", {F32({1, 2, 3}, {1, 3, 1})}, Lrn(3, 1, 1, 3));
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensor((*y)[0], {1, 3, 1}, {1.0 / 6, 2.0 / 15, 3.0 / 14}, 1e-6);
}

TEST(LrnKernelTest, EvenWindowReachesOneChannelFurtherUp) {
  // size 2: channels c and c + 1; alpha / size = 1, bias 0, beta 0.5.
  auto y = RunOp("LRN", {F32({1, 2, 3}, {1, 3})}, Lrn(2, 0.5f, 0, 2));
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensor((*y)[0], {1, 3}, {1 / std::sqrt(5.0), 2 / std::sqrt(13.0), 1.0},
               1e-6);
}

TEST(LrnKernelTest, NormalisesEachBatchAndPositionApart) {
  // [2, 2, 2]: positions and images never mix; size 1 is x / (1 + x^2).
  auto y = RunOp("LRN", {F32({1, 2, 3, 4, 0, -1, 2, -2}, {2, 2, 2})},
                 Lrn(1, 1, 1, 1));
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensor((*y)[0], {2, 2, 2},
               {0.5, 0.4, 0.3, 4.0 / 17, 0, -0.5, 0.4, -0.4}, 1e-6);
}

TEST(LrnKernelTest, HalfComputesInFloat) {
  auto y = RunOp("LRN", {MakeTensor(DT_FLOAT16, {1, 3, 1}, {1, 2, 3})},
                 Lrn(3, 1, 1, 3));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].dtype(), DT_FLOAT16);
  ExpectTensor((*y)[0], {1, 3, 1}, {1.0 / 6, 2.0 / 15, 3.0 / 14}, 1e-3);
}

TEST(LrnPlanTest, RefusesAnInputWithoutChannels) {
  absl::StatusOr<LrnPlan> p = PlanLrn(LrnAttrs{}, Shape({4}));
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      p.status().message(),
      HasSubstr("LRN needs an input [N, C, ...] of rank >= 2, got [4]"));
}

TEST(LrnPlanTest, RefusesASizeBelowOne) {
  auto y = RunOp("LRN", {F32({1, 2}, {1, 2})}, Lrn(1, 1, 1, 0));
  EXPECT_FALSE(y.ok());
  EXPECT_THAT(y.status().message(), HasSubstr("LRN size must be >= 1, got 0"));
}

}  // namespace
}  // namespace sluice::testing::lrn_test
