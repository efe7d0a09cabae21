// ConvIm2colGemmNhwc (kernels/cpu/conv_im2col_gemm.h): which convolutions it
// takes, how it cuts the product, and that an NHWC FusedConv2D it runs
// (bias, residual, activation; 3 x 3 and strided 1 x 1 windows, asymmetric
// pads, batches; one and two threads, cutting rows or output channels)
// matches the kernels' own loops on the same tensors.
#include "kernels/cpu/conv_im2col_gemm.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernel_test_util.h"
#include "kernels/cpu/onednn_conv.h"

namespace sluice::conv_im2col_gemm_test {
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
                    std::vector<int64_t> dilations = {1, 1},
                    int64_t group = 1) {
  Conv2DParams p;
  p.strides = std::move(strides);
  p.pads = std::move(pads);
  p.dilations = std::move(dilations);
  p.group = group;
  return p;
}

TEST(Im2colGemmPaysTest, TakesDeepWindowsAndStridedOnes) {
  // ResNet-50's 3 x 3 of 512 and 256 channels, its strided 3 x 3 (128
  // channels) and strided 1 x 1 downsampling.
  EXPECT_TRUE(
      cpu::Im2colGemmPays(Params({1, 1}, {1, 1, 1, 1}), 512, 3, 3, 2, false));
  EXPECT_TRUE(
      cpu::Im2colGemmPays(Params({1, 1}, {1, 1, 1, 1}), 256, 3, 3, 1, false));
  EXPECT_TRUE(
      cpu::Im2colGemmPays(Params({2, 2}, {1, 1, 1, 1}), 128, 3, 3, 2, false));
  EXPECT_TRUE(
      cpu::Im2colGemmPays(Params({2, 2}, {0, 0, 0, 0}), 256, 1, 1, 2, false));
}

TEST(Im2colGemmPaysTest, LeavesWhatTheDirectKernelsDoBetter) {
  // Shallow inputs (64 channels on 56 x 56; the 3-channel stem), unstrided
  // 1 x 1 (oneDNN's 1 x 1 kernel), 3 x 3 of 128 channels unstrided.
  EXPECT_FALSE(
      cpu::Im2colGemmPays(Params({1, 1}, {1, 1, 1, 1}), 64, 3, 3, 2, false));
  EXPECT_FALSE(
      cpu::Im2colGemmPays(Params({2, 2}, {3, 3, 3, 3}), 3, 7, 7, 2, false));
  EXPECT_FALSE(
      cpu::Im2colGemmPays(Params({1, 1}, {0, 0, 0, 0}), 1024, 1, 1, 2, false));
  // ResNet-50's strided 1 x 1 of 512 and 1024 channels.
  EXPECT_FALSE(
      cpu::Im2colGemmPays(Params({2, 2}, {0, 0, 0, 0}), 512, 1, 1, 2, false));
  EXPECT_FALSE(
      cpu::Im2colGemmPays(Params({1, 1}, {1, 1, 1, 1}), 128, 3, 3, 2, false));
  // Grouped, dilated, and a pool that runs oneDNN on an OpenMP team.
  EXPECT_FALSE(cpu::Im2colGemmPays(Params({1, 1}, {1, 1, 1, 1}, {1, 1}, 2), 512,
                                   3, 3, 2, false));
  EXPECT_FALSE(cpu::Im2colGemmPays(Params({1, 1}, {2, 2, 2, 2}, {2, 2}), 512, 3,
                                   3, 2, false));
  EXPECT_FALSE(
      cpu::Im2colGemmPays(Params({1, 1}, {1, 1, 1, 1}), 512, 3, 3, 4, false));
  // AVX-512: oneDNN's brgemm and Winograd kernels, not compared.
  EXPECT_FALSE(
      cpu::Im2colGemmPays(Params({1, 1}, {1, 1, 1, 1}), 512, 3, 3, 2, true));
}

TEST(PlanIm2colGemmTest, CutsChannelsOnSmallMapsAndRowsOnLargeOnes) {
  // 7 x 7 of 512 channels, 3 x 3: one chunk, two runs of 256 channels.
  cpu::Im2colGemmPlan small = cpu::PlanIm2colGemm(49, 512, 4608, 2);
  EXPECT_EQ(small.row_chunks, 1);
  EXPECT_EQ(small.parts, 2);
  EXPECT_EQ(small.workers, 2);
  EXPECT_EQ(small.scratch_floats, 2 * 49 * 4608);
  // 28 x 28 outputs of a strided 3 x 3 over 128 channels: rows cut.
  cpu::Im2colGemmPlan large = cpu::PlanIm2colGemm(784, 128, 1152, 2);
  EXPECT_EQ(large.parts, 1);
  EXPECT_EQ(large.row_chunks, 2);
  EXPECT_EQ(large.chunk_rows, 392);
  // One thread: no channel cut; chunks bounded by kIm2colChunkBytes.
  cpu::Im2colGemmPlan one = cpu::PlanIm2colGemm(32 * 196, 256, 2304, 1);
  EXPECT_EQ(one.parts, 1);
  EXPECT_EQ(one.workers, 1);
  EXPECT_LE(one.chunk_rows * 2304 * 4, cpu::kIm2colChunkBytes);
  EXPECT_GE(one.chunk_rows * one.row_chunks, 32 * 196);
}

struct Case {
  std::string name;
  std::vector<Shape> nhwc;  // x [N,H,W,C], f [O,KH,KW,C], bias, side
  Conv2DParams params;
  std::string activation;
};

Attrs NodeAttrs(const Case& c) {
  return {{"strides", IntListAttr(c.params.strides)},
          {"pads", IntListAttr(c.params.pads)},
          {"dilations", IntListAttr(c.params.dilations)},
          {"group", IntAttr(1)},
          {"data_format", StringAttr("NHWC")},
          {"activation", StringAttr(c.activation)}};
}

std::vector<Tensor> Inputs(const Case& c) {
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

TEST(ConvIm2colGemmTest, MatchesTheLoopsAtOneAndTwoThreads) {
  if (!cpu::OneDnnConvolutionsBuiltIn()) {
    GTEST_SKIP() << "the NHWC fast path needs this build's oneDNN";
  }
  if (cpu::OneDnnHasAvx512()) {
    GTEST_SKIP() << "AVX-512: these convolutions stay on oneDNN's kernels "
                    "(Im2colGemmPays)";
  }
  const std::vector<Case> cases = {
      // Two threads cut the 136 output channels (8-aligned runs: 64 + 72).
      {"deep_3x3_small_map_residual_relu",
       {Shape({1, 5, 6, 256}), Shape({136, 3, 3, 256}), Shape({136}),
        Shape({1, 5, 6, 136})},
       Params({1, 1}, {1, 1, 1, 1}),
       "relu"},
      // Strided, asymmetric pads (windows cut at every edge), batch 4:
      // 4 x 12 x 12 = 576 rows, cut in two at two threads.
      {"strided_3x3_asymmetric_hardswish_batch4",
       {Shape({4, 23, 24, 128}), Shape({16, 3, 3, 128}), Shape({16})},
       Params({2, 2}, {0, 1, 2, 1}),
       "hardswish"},
      // A strided 1 x 1 (ResNet's downsampling), SiLU.
      {"strided_1x1_silu",
       {Shape({1, 9, 9, 160}), Shape({40, 1, 1, 160}), Shape({40})},
       Params({2, 2}, {0, 0, 0, 0}),
       "silu"},
      // A 5 x 3 window wider than the map, on both sides.
      {"window_past_the_map_none",
       {Shape({2, 3, 2, 256}), Shape({24, 5, 3, 256}), Shape({24})},
       Params({1, 1}, {2, 2, 2, 2}),
       "none"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Shape& x = c.nhwc[0];
    const Shape& f = c.nhwc[1];
    ASSERT_TRUE(
        cpu::Im2colGemmPays(c.params, x.dim(3), f.dim(1), f.dim(2), 2, false));
    const std::vector<Tensor> in = Inputs(c);
    SetTestCpuConvolutions(CpuConvPath::kLoops);
    absl::StatusOr<std::vector<Tensor>> want =
        RunOp("FusedConv2D", in, NodeAttrs(c));
    SetTestCpuConvolutions(CpuConvPath::kAuto);
    ASSERT_TRUE(want.ok()) << want.status();
    const int64_t rows =
        (*want)[0].dim(0) * (*want)[0].dim(1) * (*want)[0].dim(2);
    for (int threads : {1, 2}) {
      SCOPED_TRACE(threads);
      const int64_t runs = cpu::ConvIm2colGemmRuns();
      const int64_t splits = cpu::ConvIm2colGemmChannelSplitRuns();
      ::sluice::testing::RunOptions options;
      options.intra_op_threads = threads;
      absl::StatusOr<std::vector<Tensor>> got =
          RunOp("FusedConv2D", in, NodeAttrs(c), options);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(cpu::ConvIm2colGemmRuns(), runs + 1);
      // Two threads with too few rows for each: output channels cut.
      const bool split = threads == 2 && rows < 512 && f.dim(0) >= 128;
      EXPECT_EQ(cpu::ConvIm2colGemmChannelSplitRuns(),
                splits + (split ? 1 : 0));
      ::sluice::testing::ExpectTensor(
          (*got)[0], (*want)[0].shape(), ToDoubles((*want)[0]),
          ::sluice::testing::RelativeAndAbsolute(1e-5));
    }
  }
}

}  // namespace
}  // namespace sluice::conv_im2col_gemm_test
