// ConvTapGemmsNhwc (kernels/cpu/conv_tap_gemms.h): which dilated windows it
// takes, and that an NHWC FusedConv2D it runs (bias, residual, activation;
// strided, asymmetric pads, batches; one and two threads, the latter cutting
// output channels) matches the kernels' own loops on the same tensors.
#include "kernels/cpu/conv_tap_gemms.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernel_test_util.h"
#include "kernels/cpu/onednn_conv.h"

namespace sluice::conv_tap_gemms_test {
namespace {

using ::sluice::testing::Attrs;
using ::sluice::testing::IntAttr;
using ::sluice::testing::IntListAttr;
using ::sluice::testing::MakeTensor;
using ::sluice::testing::RunOp;
using ::sluice::testing::SetTestCpuConvolutions;
using ::sluice::testing::StringAttr;
using ::sluice::testing::ToDoubles;

Conv2DParams Params(std::vector<int64_t> strides, std::vector<int64_t> pads,
                    std::vector<int64_t> dilations, int64_t group = 1) {
  Conv2DParams p;
  p.strides = std::move(strides);
  p.pads = std::move(pads);
  p.dilations = std::move(dilations);
  p.group = group;
  return p;
}

TEST(TapGemmsPayTest, TakesDeepLabsRate12AsppOn14x14) {
  // Taps at -12, 0, +12: 2 + 14 + 2 rows and columns of 3 x 14 read the
  // image, 324 of 1,764 positions.
  EXPECT_TRUE(cpu::TapGemmsPay(Params({1, 1}, {12, 12, 12, 12}, {12, 12}), 14,
                               14, 14, 14, 3, 3));
}

TEST(TapGemmsPayTest, LeavesWindowsThatMostlyReadTheImage) {
  // Undilated, and dilated by 2 on a large map: a direct kernel wins.
  EXPECT_FALSE(cpu::TapGemmsPay(Params({1, 1}, {1, 1, 1, 1}, {1, 1}), 14, 14,
                                14, 14, 3, 3));
  EXPECT_FALSE(cpu::TapGemmsPay(Params({1, 1}, {2, 2, 2, 2}, {2, 2}), 28, 28,
                                28, 28, 3, 3));
  // Rate 24 on 14 x 14: only the centre tap reads the image, which the
  // direct path runs as a 1 x 1 convolution (LiveTaps).
  EXPECT_FALSE(cpu::TapGemmsPay(Params({1, 1}, {24, 24, 24, 24}, {24, 24}), 14,
                                14, 14, 14, 3, 3));
}

TEST(TapGemmsPayTest, LeavesGroupedConvolutions) {
  EXPECT_FALSE(
      cpu::TapGemmsPay(Params({1, 1}, {12, 12, 12, 12}, {12, 12}, /*group=*/4),
                       14, 14, 14, 14, 3, 3));
}

struct TapCase {
  std::string name;
  std::vector<Shape> nhwc;  // x [N,H,W,C], f [O,KH,KW,C], bias, side
  Conv2DParams params;
  std::string activation;
};

Attrs NodeAttrs(const TapCase& c) {
  return {{"strides", IntListAttr(c.params.strides)},
          {"pads", IntListAttr(c.params.pads)},
          {"dilations", IntListAttr(c.params.dilations)},
          {"group", IntAttr(1)},
          {"data_format", StringAttr("NHWC")},
          {"activation", StringAttr(c.activation)}};
}

std::vector<Tensor> Inputs(const TapCase& c) {
  std::mt19937 rng(static_cast<uint32_t>(c.name.size() * 7919));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<Tensor> out;
  for (const Shape& s : c.nhwc) {
    std::vector<double> v(s.num_elements());
    for (double& e : v) e = u(rng);
    out.push_back(MakeTensor(DT_FLOAT, s, v));
  }
  return out;
}

TEST(ConvTapGemmsTest, MatchesTheLoopsAtOneAndTwoThreads) {
  if (!cpu::OneDnnConvolutionsBuiltIn()) {
    GTEST_SKIP() << "the NHWC fast path needs this build's oneDNN";
  }
  // The least work per channel run lowered so that two threads cut even
  // these small problems (restored however the test ends).
  cpu::SetMinConvSliceMacs(1);
  struct Restore {
    ~Restore() { cpu::SetMinConvSliceMacs(0); }
  } restore;
  const std::vector<TapCase> cases = {
      {"aspp_like_residual_relu",
       {Shape({1, 7, 7, 16}), Shape({24, 3, 3, 16}), Shape({24}),
        Shape({1, 7, 7, 24})},
       Params({1, 1}, {4, 4, 4, 4}, {4, 4}),
       "relu"},
      {"strided_asymmetric_hardswish_batch3",
       {Shape({3, 9, 11, 8}), Shape({20, 3, 3, 8}), Shape({20})},
       Params({2, 2}, {5, 4, 3, 6}, {5, 5}),
       "hardswish"},
      {"rows_only_dilated_silu",
       {Shape({1, 6, 10, 12}), Shape({16, 3, 1, 12}), Shape({16})},
       Params({1, 1}, {5, 0, 5, 0}, {5, 1}),
       "silu"},
  };
  for (const TapCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Shape& x = c.nhwc[0];
    const Shape& f = c.nhwc[1];
    const int64_t oh = (x.dim(1) + c.params.pads[0] + c.params.pads[2] -
                        (f.dim(1) - 1) * c.params.dilations[0] - 1) /
                           c.params.strides[0] +
                       1;
    const int64_t ow = (x.dim(2) + c.params.pads[1] + c.params.pads[3] -
                        (f.dim(2) - 1) * c.params.dilations[1] - 1) /
                           c.params.strides[1] +
                       1;
    ASSERT_TRUE(cpu::TapGemmsPay(c.params, x.dim(1), x.dim(2), oh, ow, f.dim(1),
                                 f.dim(2)));
    const std::vector<Tensor> in = Inputs(c);
    SetTestCpuConvolutions(CpuConvPath::kLoops);
    absl::StatusOr<std::vector<Tensor>> want =
        RunOp("FusedConv2D", in, NodeAttrs(c));
    SetTestCpuConvolutions(CpuConvPath::kAuto);
    ASSERT_TRUE(want.ok()) << want.status();
    for (int threads : {1, 2}) {
      SCOPED_TRACE(threads);
      const int64_t runs = cpu::ConvTapGemmsRuns();
      const int64_t splits = cpu::ConvTapGemmsChannelSplitRuns();
      ::sluice::testing::RunOptions options;
      options.intra_op_threads = threads;
      absl::StatusOr<std::vector<Tensor>> got =
          RunOp("FusedConv2D", in, NodeAttrs(c), options);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(cpu::ConvTapGemmsRuns(), runs + 1);
      // One image and two threads: its output channels are cut in two.
      const bool split = threads == 2 && x.dim(0) == 1;
      EXPECT_EQ(cpu::ConvTapGemmsChannelSplitRuns(), splits + (split ? 1 : 0));
      ::sluice::testing::ExpectTensor(
          (*got)[0], (*want)[0].shape(), ToDoubles((*want)[0]),
          ::sluice::testing::RelativeAndAbsolute(1e-5));
    }
  }
}

}  // namespace
}  // namespace sluice::conv_tap_gemms_test
