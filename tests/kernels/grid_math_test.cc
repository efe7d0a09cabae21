// The sampling math GridSample, AffineGrid and RoiAlign share between the
// CPU and the .cu files (kernels/grid_math.h), on the host.
#include "kernels/grid_math.h"

#include "gtest/gtest.h"

namespace sluice::grid_math_test {
namespace {

TEST(GridMathTest, ReflectsIntoTheRangeAsOftenAsItTakes) {
  EXPECT_DOUBLE_EQ(GridReflect(-0.5, 0.0, 3.0), 0.5);
  EXPECT_DOUBLE_EQ(GridReflect(4.0, 0.0, 3.0), 2.0);
  EXPECT_DOUBLE_EQ(GridReflect(7.0, 0.0, 3.0), 1.0);  // past both ends
  EXPECT_DOUBLE_EQ(GridReflect(1.5, 0.0, 3.0), 1.5);
}

TEST(GridMathTest, LinearTapsSplitBetweenNeighboursAndZeroOutside) {
  GridAxisTaps t;
  // len 4, align_corners: coordinate 0 is pixel 1.5.
  MakeGridAxisTaps(GridInterp::kLinear, GridPadding::kZeros, true, 4, 0.0, &t);
  ASSERT_EQ(t.count, 2);
  EXPECT_EQ(t.index[0], 1);
  EXPECT_EQ(t.index[1], 2);
  EXPECT_DOUBLE_EQ(t.weight[0], 0.5);
  EXPECT_DOUBLE_EQ(t.weight[1], 0.5);
  MakeGridAxisTaps(GridInterp::kLinear, GridPadding::kZeros, true, 4, 1.2, &t);
  EXPECT_EQ(t.index[1], -1);  // past the end: a zero
  MakeGridAxisTaps(GridInterp::kLinear, GridPadding::kBorder, true, 4, 1.2, &t);
  EXPECT_EQ(t.index[0], 3);  // clamped to the border
}

TEST(GridMathTest, CubicWeightsSumToOne) {
  GridAxisTaps t;
  MakeGridAxisTaps(GridInterp::kCubic, GridPadding::kBorder, false, 8, 0.1, &t);
  ASSERT_EQ(t.count, 4);
  double sum = 0;
  for (int k = 0; k < 4; ++k) sum += t.weight[k];
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

TEST(GridMathTest, SampleSumCombinesTheAxesTaps) {
  // A 2x2 plane sampled at its centre: the mean of the four values.
  GridAxisTaps taps[2];
  for (GridAxisTaps& t : taps) {
    MakeGridAxisTaps(GridInterp::kLinear, GridPadding::kZeros, true, 2, 0.0, &t);
  }
  const double plane[4] = {1, 2, 3, 4};
  const int64_t strides[2] = {2, 1};
  int pick[2];
  EXPECT_DOUBLE_EQ(GridSampleSum(taps, 2, strides, pick,
                                 [&](int64_t off) { return plane[off]; }),
                   2.5);
}

TEST(GridMathTest, GridCoordSpansMinusOneToOne) {
  EXPECT_DOUBLE_EQ(GridCoord(0, 3, true), -1.0);
  EXPECT_DOUBLE_EQ(GridCoord(2, 3, true), 1.0);
  EXPECT_DOUBLE_EQ(GridCoord(0, 2, false), -0.5);
}

TEST(GridMathTest, RoiBinsAndBilinearSamples) {
  const double box[4] = {0, 0, 4, 2};  // x1, y1, x2, y2
  const RoiBins b = RoiBinsFor(box, 1.0, /*half_pixel=*/false, /*sampling_ratio=*/2, 2, 2);
  EXPECT_DOUBLE_EQ(b.bw, 2.0);
  EXPECT_DOUBLE_EQ(b.bh, 1.0);
  EXPECT_EQ(b.gh, 2);
  EXPECT_DOUBLE_EQ(b.count, 4.0);
  const RoiSample s = RoiBilinear(0.5, 0.5, 2, 2);
  for (int k = 0; k < 4; ++k) EXPECT_DOUBLE_EQ(s.w[k], 0.25);
  const RoiSample outside = RoiBilinear(-2.0, 0.5, 2, 2);
  for (int k = 0; k < 4; ++k) EXPECT_DOUBLE_EQ(outside.w[k], 0.0);
}

}  // namespace
}  // namespace sluice::grid_math_test
