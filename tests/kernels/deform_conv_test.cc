// DeformConv on the CPU (kernels/cpu/deform_conv.cc): a 1x1 window whose
// taps move by half a pixel, worked out by hand (bilinear, 0 outside the
// image), with the mask and bias, and the shape checks.
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"

namespace sluice::testing::deform_conv_test {
namespace {

using ::testing::HasSubstr;

Attrs Window() {
  return {{"strides", IntListAttr({1, 1})},
          {"pads", IntListAttr({0, 0, 0, 0})},
          {"dilations", IntListAttr({1, 1})},
          {"group", IntAttr(1)},
          {"offset_group", IntAttr(1)}};
}

TEST(DeformConvKernelTest, MovedTapsInterpolateAndZeroOutside) {
  const Tensor x = F32({1, 2, 3, 4}, {1, 1, 2, 2});
  const Tensor w = F32({1}, {1, 1, 1, 1});
  // dy = 0 everywhere, dx = 0.5 everywhere.
  const Tensor offset = F32({0, 0, 0, 0, 0.5f, 0.5f, 0.5f, 0.5f}, {1, 2, 2, 2});
  const Tensor bias = F32({1}, {1});
  const Tensor mask = F32({2}, {});
  auto y = RunOp("DeformConv", {x, w, offset, bias, mask}, Window());
  ASSERT_TRUE(y.ok()) << y.status();
  // Samples: (0, 0.5) = 1.5; (0, 1.5) = 0.5 * 2 (its right neighbour is
  // outside) = 1; (1, 0.5) = 3.5; (1, 1.5) = 0.5 * 4 = 2; then 2 v + 1.
  ExpectTensor((*y)[0], {1, 1, 2, 2}, {4, 3, 8, 5}, 1e-6);
}

TEST(DeformConvKernelTest, ZeroOffsetsAreAnOrdinaryConvolution) {
  const Tensor x = F32({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  const Tensor w = F32({1, 0, 0, -1}, {1, 1, 2, 2});
  const Tensor offset =
      MakeTensor(DT_FLOAT, {1, 8, 2, 2}, std::vector<double>(32, 0.0));
  auto y = RunOp("DeformConv", {x, w, offset, F32({0}, {1}), F32({1}, {})},
                 Window());
  ASSERT_TRUE(y.ok()) << y.status();
  ExpectTensor((*y)[0], {1, 1, 2, 2}, {-4, -4, -4, -4});
}

TEST(DeformConvKernelTest, RefusesOffsetsOfTheWrongShape) {
  const Tensor x = F32({1, 2, 3, 4}, {1, 1, 2, 2});
  auto y = RunOp("DeformConv",
                 {x, F32({1}, {1, 1, 1, 1}), F32({0, 0}, {1, 2, 1, 1}),
                  F32({0}, {1}), F32({1}, {})},
                 Window());
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(y.status().message(),
              HasSubstr("DeformConv offset must be [1,2,2,2], got [1,2,1,1]"));
}

}  // namespace
}  // namespace sluice::testing::deform_conv_test
