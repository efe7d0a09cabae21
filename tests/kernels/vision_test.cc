// The N-d vision kernels (Resize, Pad, GridSample, ConvND, ConvTranspose,
// PoolND, MaxPoolWithIndices, Col2Im) against small hand-derived examples.
// The ONNX node suite checks them against the ONNX reference outputs.
#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"

namespace sluice::testing::vision_test {
namespace {

using ::testing::HasSubstr;

Tensor NoInts() { return I64({}, Shape({0})); }
Tensor NoFloats() { return F32({}, Shape({0})); }

absl::StatusOr<std::vector<Tensor>> Pad1D(const std::string& mode,
                                          std::vector<int64_t> pads,
                                          Tensor value = NoFloats()) {
  return RunOp("Pad",
               {F32({1, 2, 3}, {3}),
                I64(pads, {static_cast<int64_t>(pads.size())}), value,
                NoInts()},
               {{"mode", StringAttr(mode)}});
}

TEST(PadKernelTest, EachModeByHand) {
  auto reflect = Pad1D("reflect", {2, 1});
  ASSERT_TRUE(reflect.ok()) << reflect.status();
  ExpectTensor((*reflect)[0], {6}, {3, 2, 1, 2, 3, 2});
  auto edge = Pad1D("edge", {2, 1});
  ASSERT_TRUE(edge.ok()) << edge.status();
  ExpectTensor((*edge)[0], {6}, {1, 1, 1, 2, 3, 3});
  auto wrap = Pad1D("wrap", {2, 1});
  ASSERT_TRUE(wrap.ok()) << wrap.status();
  ExpectTensor((*wrap)[0], {6}, {2, 3, 1, 2, 3, 1});
  auto constant = Pad1D("constant", {2, 1}, F32({9}, {}));
  ASSERT_TRUE(constant.ok()) << constant.status();
  ExpectTensor((*constant)[0], {6}, {9, 9, 1, 2, 3, 9});
}

TEST(PadKernelTest, NegativePadsCrop) {
  auto out = Pad1D("constant", {-1, 1});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {3}, {2, 3, 0});
}

TEST(PadKernelTest, PadsOfAxesOnly) {
  // [2,2] padded on axis -1 only.
  auto out = RunOp("Pad", {F32({1, 2, 3, 4}, {2, 2}), I64({1, 0}, {2}),
                           NoFloats(), I64({-1}, {1})},
                   {{"mode", StringAttr("edge")}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {2, 3}, {1, 1, 2, 3, 3, 4});
}

TEST(PadKernelTest, WrongNumberOfPadsIsAnError) {
  auto out = Pad1D("constant", {1, 1, 1});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("3 pads"));
}

TEST(ResizeKernelTest, LinearHalfPixelByHand) {
  auto out = RunOp("Resize", {F32({0, 10}, {1, 2}), NoFloats(),
                              F32({1, 2}, {2}), NoInts()},
                   {{"mode", StringAttr("linear")}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {1, 4}, {0, 2.5, 7.5, 10}, 1e-6);
}

TEST(ResizeKernelTest, NearestFromSizes) {
  auto out = RunOp(
      "Resize", {F32({1, 2, 3}, {3}), NoFloats(), NoFloats(), I64({6}, {1})},
      {{"coordinate_transformation_mode", StringAttr("asymmetric")},
       {"nearest_mode", StringAttr("floor")}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {6}, {1, 1, 2, 2, 3, 3});
}

// float32 resized on its last two axes runs in float (ResizePlanesFloat);
// float64 takes the general double path: the same result to float
// rounding, for linear, cubic and nearest, up and down.
TEST(ResizeKernelTest, FloatPlanesMatchTheDoublePath) {
  std::vector<double> v(2 * 3 * 5 * 7);
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37 * i) * 4;
  for (const char* mode : {"linear", "cubic", "nearest"}) {
    for (int64_t h : {20, 3}) {
      SCOPED_TRACE(::testing::Message() << mode << " to " << h);
      const Tensor sizes = I64({2, 3, h, 21}, {4});
      const Attrs attrs = {{"mode", StringAttr(mode)}};
      auto f32 = RunOp("Resize", {MakeTensor(DT_FLOAT, {2, 3, 5, 7}, v),
                                  NoFloats(), NoFloats(), sizes}, attrs);
      auto f64 = RunOp("Resize", {MakeTensor(DT_DOUBLE, {2, 3, 5, 7}, v),
                                  NoFloats(), NoFloats(), sizes}, attrs);
      ASSERT_TRUE(f32.ok()) << f32.status();
      ASSERT_TRUE(f64.ok()) << f64.status();
      ExpectTensor((*f32)[0], {2, 3, h, 21}, ToDoubles((*f64)[0]), 1e-5);
    }
  }
}

TEST(ResizeKernelTest, ScalesAndSizesTogetherAreAnError) {
  auto out = RunOp("Resize", {F32({1, 2, 3}, {3}), NoFloats(),
                              F32({2}, {1}), I64({6}, {1})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("exactly one"));
}

TEST(GridSampleKernelTest, LinearCornersAndCentre) {
  // Points: centre (no align_corners: 2.5), then with align_corners the
  // top-left and top-right pixels.
  const Tensor x = F32({1, 2, 3, 4}, {1, 1, 2, 2});
  auto centre = RunOp("GridSample", {x, F32({0, 0}, {1, 1, 1, 2})});
  ASSERT_TRUE(centre.ok()) << centre.status();
  ExpectTensor((*centre)[0], {1, 1, 1, 1}, {2.5}, 1e-6);
  auto corners = RunOp("GridSample", {x, F32({-1, -1, 1, -1}, {1, 1, 2, 2})},
                       {{"align_corners", BoolAttr(true)}});
  ASSERT_TRUE(corners.ok()) << corners.status();
  ExpectTensor((*corners)[0], {1, 1, 1, 2}, {1, 2}, 1e-6);
}

TEST(ConvNdKernelTest, OneDimensionalByHand) {
  // out[i] = x[i-1] - x[i+1], zero outside.
  auto out = RunOp("ConvND",
                   {F32({1, 2, 3, 4, 5}, {1, 1, 5}), F32({1, 0, -1}, {1, 1, 3})},
                   {{"strides", IntListAttr({1})},
                    {"pads", IntListAttr({1, 1})},
                    {"dilations", IntListAttr({1})}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {1, 1, 5}, {-2, -2, -2, -2, 4});
}

TEST(ConvTransposeKernelTest, OneDimensionalByHand) {
  const Attrs base = {{"pads", IntListAttr({0, 0})},
                      {"dilations", IntListAttr({1})},
                      {"output_padding", IntListAttr({0})}};
  Attrs s2 = base, s1 = base;
  s2["strides"] = IntListAttr({2});
  s1["strides"] = IntListAttr({1});
  const std::vector<Tensor> in = {F32({1, 2, 3}, {1, 1, 3}),
                                  F32({1, 1}, {1, 1, 2})};
  auto strided = RunOp("ConvTranspose", in, s2);
  ASSERT_TRUE(strided.ok()) << strided.status();
  ExpectTensor((*strided)[0], {1, 1, 6}, {1, 1, 2, 2, 3, 3});
  auto unit = RunOp("ConvTranspose", in, s1);
  ASSERT_TRUE(unit.ok()) << unit.status();
  ExpectTensor((*unit)[0], {1, 1, 4}, {1, 3, 5, 3});
}

Attrs Pool1D(const std::string& mode, bool ceil) {
  return {{"mode", StringAttr(mode)},         {"kernel_shape", IntListAttr({2})},
          {"strides", IntListAttr({2})},      {"pads", IntListAttr({0, 0})},
          {"dilations", IntListAttr({1})},    {"ceil_mode", BoolAttr(ceil)}};
}

TEST(PoolNdKernelTest, MaxAvgLpByHand) {
  const Tensor x = F32({1, 5, 2, 4, 3}, {1, 1, 5});
  auto max = RunOp("PoolND", {x}, Pool1D("max", true));
  ASSERT_TRUE(max.ok()) << max.status();
  ExpectTensor((*max)[0], {1, 1, 3}, {5, 4, 3});
  auto avg = RunOp("PoolND", {x}, Pool1D("avg", false));
  ASSERT_TRUE(avg.ok()) << avg.status();
  ExpectTensor((*avg)[0], {1, 1, 2}, {3, 3});
  auto lp = RunOp("PoolND", {x}, Pool1D("lp", false));
  ASSERT_TRUE(lp.ok()) << lp.status();
  ExpectTensor((*lp)[0], {1, 1, 2}, {std::sqrt(26.0), std::sqrt(20.0)}, 1e-5);
}

TEST(PoolNdKernelTest, MaxPoolIndicesAreFlatInputOffsets) {
  Attrs attrs = Pool1D("max", true);
  attrs.erase("mode");
  RunOptions opts;
  opts.num_outputs = 2;
  auto out = RunOp("MaxPoolWithIndices",
                   {F32({1, 5, 2, 4, 3, 0, 1, 0, 7, 6}, {1, 2, 5})}, attrs,
                   opts);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {1, 2, 3}, {5, 4, 3, 1, 7, 6});
  ExpectTensor((*out)[1], {1, 2, 3}, {1, 3, 4, 6, 8, 9});
}

TEST(Col2ImKernelTest, OverlappingBlocksAdd) {
  // Image [3], block [2]: two positions; image[1] gets 2 + 3.
  auto out = RunOp("Col2Im", {F32({1, 2, 3, 4}, {1, 2, 2}), I64({3}, {1}),
                              I64({2}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {1, 1, 3}, {1, 5, 4});
}

TEST(AffineGridKernelTest, IdentityThetaGivesPixelCentres) {
  auto out = RunOp("AffineGrid",
                   {F32({1, 0, 0, 0, 1, 0}, {1, 2, 3}), I64({1, 1, 2, 2}, {4})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {1, 2, 2, 2},
               {-0.5, -0.5, 0.5, -0.5, -0.5, 0.5, 0.5, 0.5}, 1e-6);
}

TEST(MaxUnpoolKernelTest, ScattersToIndices) {
  auto out = RunOp("MaxUnpool",
                   {F32({5, 6}, {1, 1, 1, 2}), I64({1, 2}, {1, 1, 1, 2}),
                    NoInts()},
                   {{"kernel_shape", IntListAttr({1, 2})},
                    {"strides", IntListAttr({1, 2})},
                    {"pads", IntListAttr({0, 0, 0, 0})}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {1, 1, 1, 4}, {0, 5, 6, 0});
}

TEST(RoiAlignKernelTest, OneSampleIsBilinear) {
  // One bin over the ROI (0,0)-(1,1), one sample at its centre (0.5, 0.5).
  auto out = RunOp("RoiAlign",
                   {F32({1, 2, 3, 4}, {1, 1, 2, 2}), F32({0, 0, 1, 1}, {1, 4}),
                    I64({0}, {1})},
                   {{"coordinate_transformation_mode",
                     StringAttr("output_half_pixel")},
                    {"sampling_ratio", IntAttr(1)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {1, 1, 1, 1}, {2.5}, 1e-6);
}

}  // namespace
}  // namespace sluice::testing::vision_test
