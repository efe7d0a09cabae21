// The CPU RMSNorm kernel (kernels/cpu/rms_norm.cc) against the formula
// y = x / sqrt(mean(x^2) + eps) * scale, written out directly.
#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"

namespace sluice::testing::rms_norm_test {
namespace {

using ::testing::HasSubstr;

// The formula in double, x as [rows, cols], scale of cols elements.
std::vector<double> RmsNormReference(const std::vector<double>& x,
                                     const std::vector<double>& scale,
                                     int64_t cols, double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r * cols < x.size(); ++r) {
    double sq = 0;
    for (int64_t j = 0; j < cols; ++j) sq += x[r * cols + j] * x[r * cols + j];
    const double rms = std::sqrt(sq / static_cast<double>(cols) + eps);
    for (int64_t j = 0; j < cols; ++j) {
      y[r * cols + j] = x[r * cols + j] / rms * scale[j];
    }
  }
  return y;
}

// Deterministic values of both signs, without a random engine.
std::vector<double> Wave(int n, double scale) {
  std::vector<double> v(n);
  for (int i = 0; i < n; ++i) v[i] = std::sin(0.7 * i + 0.3) * scale;
  return v;
}

TEST(RMSNormKernelTest, LastAxisByHand) {
  // Row {3, 4}: mean of squares 12.5; row {0, 0} with eps 0 is 0/0.
  auto out = RunOp("RMSNorm", {F32({3, 4, 0, 0}, {2, 2}), F32({1, 2}, {2})},
                   {{"epsilon", FloatAttr(0)}});
  ASSERT_TRUE(out.ok()) << out.status();
  const double rms = std::sqrt(12.5);
  ExpectTensor((*out)[0], {2, 2}, {3 / rms, 8 / rms, NAN, NAN}, 1e-6);
}

TEST(RMSNormKernelTest, MatchesTheFormulaOnALongRow) {
  const int rows = 3, cols = 4096;
  const std::vector<double> x = Wave(rows * cols, 3.0);
  const std::vector<double> scale = Wave(cols, 1.5);
  std::vector<float> xf(x.begin(), x.end()), sf(scale.begin(), scale.end());
  auto out = RunOp("RMSNorm", {F32(xf, {rows, cols}), F32(sf, {cols})},
                   {{"epsilon", FloatAttr(1e-6f)}});
  ASSERT_TRUE(out.ok()) << out.status();
  // The reference reads the float-rounded inputs, as the kernel does.
  std::vector<double> xr(xf.begin(), xf.end()), sr(sf.begin(), sf.end());
  ExpectTensor((*out)[0], {rows, cols},
               RmsNormReference(xr, sr, cols, static_cast<double>(1e-6f)),
               1e-5);
}

TEST(RMSNormKernelTest, LeadingAxisNormalisesTrailingBlock) {
  const std::vector<double> x = Wave(2 * 3 * 5, 2.0);
  const std::vector<double> scale = Wave(15, 1.0);
  std::vector<float> xf(x.begin(), x.end()), sf(scale.begin(), scale.end());
  auto out = RunOp("RMSNorm", {F32(xf, {2, 3, 5}), F32(sf, {3, 5})},
                   {{"axis", IntAttr(1)}, {"epsilon", FloatAttr(1e-3f)}});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> xr(xf.begin(), xf.end()), sr(sf.begin(), sf.end());
  ExpectTensor((*out)[0], {2, 3, 5},
               RmsNormReference(xr, sr, 15, static_cast<double>(1e-3f)), 1e-5);
}

TEST(RMSNormKernelTest, EveryFloatDtype) {
  for (DataType t : {DT_FLOAT, DT_DOUBLE, DT_FLOAT16, DT_BFLOAT16}) {
    // Row {1, -1, 1, -1}: rms 1 -> x * scale.
    auto out = RunOp("RMSNorm", {MakeTensor(t, {4}, {1, -1, 1, -1}),
                                 MakeTensor(t, {4}, {2, 2, 0.5, 0.5})},
                     {{"epsilon", FloatAttr(0)}});
    ASSERT_TRUE(out.ok()) << DataTypeName(t) << ": " << out.status();
    EXPECT_EQ((*out)[0].dtype(), t);
    // The mean of 4 squares; every value is exact in every dtype.
    ExpectTensor((*out)[0], {4}, {2, -2, 0.5, -0.5},
                 DtypeTolerance(t, /*reduction_length=*/4, /*scale=*/0));
  }
}

TEST(RMSNormKernelTest, HalfStatisticsDoNotOverflow) {
  // 300^2 = 90000 overflows float16 (max 65504): the statistics must be
  // kept in float32 for the row to come out finite.
  auto out = RunOp("RMSNorm", {MakeTensor(DT_FLOAT16, {2}, {300, -300}),
                               MakeTensor(DT_FLOAT16, {2}, {1, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {2}, {1, -1},
               DtypeTolerance(DT_FLOAT16, /*reduction_length=*/2, /*scale=*/0));
}

TEST(RMSNormKernelTest, WrongScaleShapeIsAnError) {
  auto out = RunOp("RMSNorm", {F32({1, 2, 3, 4}, {2, 2}), F32({1, 1, 1}, {3})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(),
              HasSubstr("RMSNorm scale [3] must have shape "
                        "x.shape[axis:] = [2]"));
}

TEST(RMSNormKernelTest, AxisOutOfRangeIsAnError) {
  auto out = RunOp("RMSNorm", {F32({1, 2}, {2}), F32({1, 1}, {2})},
                   {{"axis", IntAttr(1)}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("axis"));
}

}  // namespace
}  // namespace sluice::testing::rms_norm_test
