// Conv2D and the pools against naive direct loops and hand-computed values.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"
#include "kernels/cpu/onednn_conv.h"

namespace sluice::testing::conv_pool_test {
namespace {

using ::testing::HasSubstr;

std::vector<double> Pattern(int n, int mod) {
  std::vector<double> v(n);
  for (int i = 0; i < n; ++i) v[i] = ((i * 7) % mod) - mod / 2.0;
  return v;
}

struct ConvCase {
  int n, c, h, w, o, kh, kw, group;
  int sh, sw, pt, pl, pb, pr, dh, dw;
};

// Direct definition of a grouped, strided, dilated, padded convolution.
std::vector<double> NaiveConv(const ConvCase& p, const std::vector<double>& x,
                              const std::vector<double>& f, int* oh, int* ow) {
  *oh = (p.h + p.pt + p.pb - p.dh * (p.kh - 1) - 1) / p.sh + 1;
  *ow = (p.w + p.pl + p.pr - p.dw * (p.kw - 1) - 1) / p.sw + 1;
  const int cg = p.c / p.group, og = p.o / p.group;
  std::vector<double> y;
  for (int b = 0; b < p.n; ++b)
    for (int o = 0; o < p.o; ++o)
      for (int i = 0; i < *oh; ++i)
        for (int j = 0; j < *ow; ++j) {
          double s = 0;
          const int g = o / og;
          for (int ci = 0; ci < cg; ++ci)
            for (int u = 0; u < p.kh; ++u)
              for (int v = 0; v < p.kw; ++v) {
                const int iy = i * p.sh - p.pt + u * p.dh;
                const int ix = j * p.sw - p.pl + v * p.dw;
                if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                s += x[((b * p.c + g * cg + ci) * p.h + iy) * p.w + ix] *
                     f[((o * cg + ci) * p.kh + u) * p.kw + v];
              }
          y.push_back(s);
        }
  return y;
}

void CheckConv(const ConvCase& p, int threads = 1) {
  auto x = Pattern(p.n * p.c * p.h * p.w, 9);
  auto f = Pattern(p.o * (p.c / p.group) * p.kh * p.kw, 5);
  int oh = 0, ow = 0;
  auto want = NaiveConv(p, x, f, &oh, &ow);
  RunOptions opts;
  opts.intra_op_threads = threads;
  auto out = RunOp("Conv2D",
                   {MakeTensor(DT_FLOAT, {p.n, p.c, p.h, p.w}, x),
                    MakeTensor(DT_FLOAT, {p.o, p.c / p.group, p.kh, p.kw}, f)},
                   {{"strides", IntListAttr({p.sh, p.sw})},
                    {"pads", IntListAttr({p.pt, p.pl, p.pb, p.pr})},
                    {"dilations", IntListAttr({p.dh, p.dw})},
                    {"group", IntAttr(p.group)}},
                   opts);
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {p.n, p.o, oh, ow}, want, 1e-4);
}

TEST(Conv2DKernelTest, ThreeByThreeByHand) {
  // One 3x3 image of 1..9, a 2x2 filter of ones: window sums.
  auto out = RunOp("Conv2D", {F32({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3}),
                              F32({1, 1, 1, 1}, {1, 1, 2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {1, 1, 2, 2}, {12, 16, 24, 28});
}

TEST(Conv2DKernelTest, MatchesNaiveAcrossParameters) {
  CheckConv({2, 3, 5, 6, 4, 3, 3, 1, 1, 1, 0, 0, 0, 0, 1, 1});  // plain
  CheckConv({1, 2, 7, 7, 2, 3, 2, 1, 2, 3, 1, 0, 2, 1, 1, 1});  // strides, pads
  CheckConv({1, 2, 8, 8, 2, 3, 3, 1, 1, 1, 2, 2, 2, 2, 2, 2});  // dilation
  CheckConv({2, 4, 5, 5, 6, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1});  // 2 groups
  CheckConv({1, 4, 4, 4, 4, 1, 1, 4, 1, 1, 0, 0, 0, 0, 1, 1});  // depthwise 1x1
  // Depthwise 3x3 (MobileNet's): strided, padded unevenly, dilated; and a
  // channel multiplier of 2 (two outputs per group: not the direct path).
  CheckConv({2, 6, 9, 8, 6, 3, 3, 6, 2, 1, 1, 1, 0, 2, 1, 1});
  CheckConv({1, 5, 7, 7, 5, 3, 3, 5, 1, 1, 2, 2, 2, 2, 2, 2});
  CheckConv({1, 3, 6, 6, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1});
  CheckConv({2, 8, 6, 6, 5, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1});  // 1x1 direct
  // Padding wider than the image: whole im2col rows and columns read pads.
  CheckConv({1, 2, 2, 3, 3, 3, 3, 1, 2, 3, 3, 2, 3, 4, 2, 3});
  CheckConv({1, 1, 1, 1, 2, 3, 3, 1, 1, 1, 2, 2, 2, 2, 1, 1});
}

TEST(Conv2DKernelTest, LargerWithThreads) {
  CheckConv({2, 16, 20, 20, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 4);
  CheckConv({2, 32, 14, 14, 32, 3, 3, 32, 1, 1, 1, 1, 1, 1, 1, 1}, 4);  // depthwise
}

// FusedConv2D: the naive convolution, + bias[o] (+ side), Relu (or ReLU6:
// clipped at 6 too); on pools of 1 to 16 threads, so the epilogue applied
// per GEMM tile (and per depthwise plane) must land on every element once,
// whatever the tiles. Returns how many outputs the clip at 6 changed.
int CheckFusedConv(const ConvCase& p, bool with_side, int threads,
                   bool relu6 = false) {
  SCOPED_TRACE(::testing::Message() << "threads " << threads << " side "
                                    << with_side << " o " << p.o << " group "
                                    << p.group << " relu6 " << relu6);
  int clipped = 0;
  auto x = Pattern(p.n * p.c * p.h * p.w, 9);
  auto f = Pattern(p.o * (p.c / p.group) * p.kh * p.kw, 5);
  int oh = 0, ow = 0;
  auto want = NaiveConv(p, x, f, &oh, &ow);
  const int plane = oh * ow;
  auto bias = Pattern(p.o, 11);
  auto side = Pattern(p.n * p.o * plane, 13);
  for (size_t i = 0; i < want.size(); ++i) {
    double v = want[i] + bias[(i / plane) % p.o] + (with_side ? side[i] : 0);
    want[i] = v < 0 ? 0 : v;
    if (relu6 && want[i] > 6) {
      want[i] = 6;
      ++clipped;
    }
  }
  std::vector<Tensor> in = {
      MakeTensor(DT_FLOAT, {p.n, p.c, p.h, p.w}, x),
      MakeTensor(DT_FLOAT, {p.o, p.c / p.group, p.kh, p.kw}, f),
      MakeTensor(DT_FLOAT, {p.o}, bias)};
  if (with_side) in.push_back(MakeTensor(DT_FLOAT, {p.n, p.o, oh, ow}, side));
  RunOptions opts;
  opts.intra_op_threads = threads;
  auto out = RunOp("FusedConv2D", in,
                   {{"strides", IntListAttr({p.sh, p.sw})},
                    {"pads", IntListAttr({p.pt, p.pl, p.pb, p.pr})},
                    {"dilations", IntListAttr({p.dh, p.dw})},
                    {"group", IntAttr(p.group)},
                    {"activation", StringAttr(relu6 ? "relu6" : "relu")}},
                   opts);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return clipped;
  ExpectTensor((*out)[0], {p.n, p.o, oh, ow}, want, 1e-3);
  return clipped;
}

TEST(FusedConv2DKernelTest, EpilogueReachesEveryTileOnAnyPool) {
  // Large enough that the GEMM is cut into tiles: 3x3 through im2col with
  // odd sizes, a strided one, a 1x1 without im2col, two groups, depthwise;
  // batch 2 so that images after the first are offset right.
  const ConvCase cases[] = {
      {1, 33, 23, 21, 47, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
      {2, 16, 31, 29, 24, 3, 3, 1, 2, 2, 1, 0, 1, 1, 1, 1},
      {2, 64, 13, 11, 80, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},
      {1, 32, 15, 15, 64, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1},
      {2, 24, 17, 19, 24, 3, 3, 24, 1, 1, 1, 1, 1, 1, 1, 1},
      {1, 3, 5, 4, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},  // smaller than a tile
  };
  for (const ConvCase& p : cases) {
    for (int threads : {1, 2, 3, 16}) {
      CheckFusedConv(p, /*with_side=*/true, threads);
      CheckFusedConv(p, /*with_side=*/false, threads);
    }
  }
}

// activation "relu6" (what conv_activation_fusion makes of Clip(0, 6)):
// min(max(v, 0), 6) on the loops and on oneDNN alike, the clip reaching
// some outputs of each problem.
TEST(FusedConv2DKernelTest, Relu6ClipsAtSixOnAnyPool) {
  const ConvCase cases[] = {
      {1, 33, 23, 21, 47, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
      {2, 64, 13, 11, 80, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},
      {2, 24, 17, 19, 24, 3, 3, 24, 1, 1, 1, 1, 1, 1, 1, 1},
  };
  for (CpuConvPath path : {CpuConvPath::kLoops, CpuConvPath::kOneDnn}) {
    SetTestCpuConvolutions(path);
    for (const ConvCase& p : cases) {
      for (int threads : {1, 3}) {
        EXPECT_GT(CheckFusedConv(p, /*with_side=*/true, threads, true), 0);
        CheckFusedConv(p, /*with_side=*/false, threads, true);
      }
    }
  }
  SetTestCpuConvolutions(CpuConvPath::kAuto);
}

// The activations the CPU's FusedConv2D also takes (hardswish,
// hardsigmoid, sigmoid, silu: conv_activation.h), with a residual, against
// their formulas in double on the naive convolution: on the loops and on
// oneDNN's post-ops (NCHW), ungrouped, 1x1 and depthwise.
TEST(FusedConv2DKernelTest, SmoothActivationsMatchTheirFormulas) {
  const std::pair<const char*, double (*)(double)> acts[] = {
      {"hardswish", [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); }},
      {"hardsigmoid", [](double v) { return std::clamp(v / 6 + 0.5, 0.0, 1.0); }},
      {"sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"silu", [](double v) { return v / (1 + std::exp(-v)); }},
  };
  const ConvCase cases[] = {
      {1, 33, 11, 9, 47, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
      {2, 64, 7, 5, 80, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},
      {1, 24, 9, 9, 24, 5, 5, 24, 2, 2, 2, 2, 2, 2, 1, 1},  // depthwise
  };
  for (CpuConvPath path : {CpuConvPath::kLoops, CpuConvPath::kOneDnn}) {
    SetTestCpuConvolutions(path);
    for (const ConvCase& p : cases) {
      auto x = Pattern(p.n * p.c * p.h * p.w, 9);
      auto f = Pattern(p.o * (p.c / p.group) * p.kh * p.kw, 5);
      int oh = 0, ow = 0;
      const auto conv = NaiveConv(p, x, f, &oh, &ow);
      const int plane = oh * ow;
      auto bias = Pattern(p.o, 11);
      auto side = Pattern(p.n * p.o * plane, 13);
      for (const auto& [name, fn] : acts) {
        SCOPED_TRACE(::testing::Message() << name << " path "
                                          << static_cast<int>(path) << " o "
                                          << p.o << " group " << p.group);
        std::vector<double> want(conv.size());
        for (size_t i = 0; i < conv.size(); ++i) {
          want[i] = fn(conv[i] + bias[(i / plane) % p.o] + side[i]);
        }
        auto out = RunOp("FusedConv2D",
                         {MakeTensor(DT_FLOAT, {p.n, p.c, p.h, p.w}, x),
                          MakeTensor(DT_FLOAT, {p.o, p.c / p.group, p.kh, p.kw}, f),
                          MakeTensor(DT_FLOAT, {p.o}, bias),
                          MakeTensor(DT_FLOAT, {p.n, p.o, oh, ow}, side)},
                         {{"strides", IntListAttr({p.sh, p.sw})},
                          {"pads", IntListAttr({p.pt, p.pl, p.pb, p.pr})},
                          {"dilations", IntListAttr({p.dh, p.dw})},
                          {"group", IntAttr(p.group)},
                          {"activation", StringAttr(name)}});
        ASSERT_TRUE(out.ok()) << out.status();
        ExpectTensor((*out)[0], {p.n, p.o, oh, ow}, want, 1e-3);
      }
    }
  }
  SetTestCpuConvolutions(CpuConvPath::kAuto);
}

TEST(FusedConv2DKernelTest, AnUnknownActivationIsAClearError) {
  auto out = RunOp("FusedConv2D",
                   {MakeTensor(DT_FLOAT, {1, 1, 2, 2}, {1, 2, 3, 4}),
                    MakeTensor(DT_FLOAT, {1, 1, 1, 1}, {1}),
                    MakeTensor(DT_FLOAT, {1}, {0})},
                   {{"activation", StringAttr("gelu")}});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), ::testing::HasSubstr("\"gelu\""));
}

// Stride-1 convolutions on images at least four times wider than the
// horizontal padding and with no more output channels than positions take
// conv.cc's shifted-GEMM path (no im2col): pads even, uneven and none,
// dilation, groups, a non-square kernel, batch 2, and channels enough that
// the tiles' columns are capped for the cache; plain and fused, on pools of
// 1 to 16 threads.
TEST(Conv2DKernelTest, StrideOneWithoutIm2ColMatchesNaive) {
  const ConvCase cases[] = {
      {1, 3, 12, 20, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
      {2, 5, 9, 17, 6, 3, 3, 1, 1, 1, 0, 2, 1, 1, 1, 1},  // uneven pads
      {1, 4, 16, 24, 8, 3, 3, 1, 1, 1, 2, 2, 2, 2, 2, 2},  // dilated
      {2, 8, 10, 18, 6, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1},  // 2 groups
      {1, 3, 10, 20, 5, 3, 3, 1, 1, 1, 0, 0, 0, 0, 1, 1},  // no pads
      {1, 2, 11, 30, 3, 5, 3, 1, 1, 1, 2, 1, 2, 1, 1, 1},  // 5x3
      {1, 7, 6, 16, 2, 1, 3, 1, 1, 1, 0, 1, 0, 1, 1, 1},   // 1x3
  };
  for (const ConvCase& p : cases) {
    for (int threads : {1, 2, 3}) CheckConv(p, threads);
  }
}

// Depthwise convolutions (conv.cc's padded-plane path): the unrolled 3x3
// loops at stride 1 and 2 (MobileNet's), uneven and oversized pads, an
// image smaller than the window, and the generic loop for 5x5, dilated and
// 2x1 windows and mixed strides; batch 2; plain and fused with a side input.
TEST(Conv2DKernelTest, DepthwiseMatchesNaive) {
  const ConvCase cases[] = {
      {1, 8, 15, 16, 8, 3, 3, 8, 2, 2, 1, 1, 1, 1, 1, 1},   // 3x3 stride 2
      {2, 4, 10, 9, 4, 3, 3, 4, 2, 2, 0, 1, 1, 0, 1, 1},    // uneven pads
      {1, 3, 8, 8, 3, 3, 3, 3, 1, 1, 3, 3, 3, 3, 1, 1},     // oversized pads
      {1, 2, 2, 2, 2, 3, 3, 2, 1, 1, 2, 2, 2, 2, 1, 1},     // tiny image
      {1, 3, 9, 11, 3, 5, 5, 3, 1, 2, 2, 2, 2, 2, 1, 1},    // 5x5, sw 2
      {2, 3, 12, 13, 3, 3, 3, 3, 2, 1, 2, 2, 2, 2, 2, 2},   // dilated
      {1, 5, 7, 6, 5, 2, 1, 5, 1, 3, 1, 0, 0, 2, 1, 1},     // 2x1, sw 3
      {2, 16, 14, 14, 16, 3, 3, 16, 1, 1, 1, 1, 1, 1, 1, 1},
  };
  for (const ConvCase& p : cases) {
    for (int threads : {1, 3}) CheckConv(p, threads);
    CheckFusedConv(p, /*with_side=*/true, 2);
  }
}

TEST(FusedConv2DKernelTest, StrideOneWithoutIm2ColReachesEveryTile) {
  const ConvCase cases[] = {
      {1, 256, 24, 40, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},  // capped columns
      {2, 32, 21, 23, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
      {1, 24, 14, 14, 36, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1},  // 2 groups
  };
  for (const ConvCase& p : cases) {
    for (int threads : {1, 2, 3, 16}) {
      CheckFusedConv(p, /*with_side=*/true, threads);
      CheckFusedConv(p, /*with_side=*/false, threads);
    }
  }
}

TEST(FusedConv2DKernelTest, BiasOfTheWrongSizeIsAnError) {
  auto out = RunOp("FusedConv2D",
                   {F32(std::vector<float>(18, 1), {1, 2, 3, 3}),
                    F32(std::vector<float>(8, 1), {1, 2, 2, 2}),
                    F32({1, 2}, {2})},
                   {{"strides", IntListAttr({1, 1})},
                    {"pads", IntListAttr({0, 0, 0, 0})},
                    {"dilations", IntListAttr({1, 1})},
                    {"group", IntAttr(1)},
                    {"activation", StringAttr("relu")}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("bias"));
}

TEST(Conv2DKernelTest, ChannelMismatchIsAnError) {
  auto out = RunOp("Conv2D", {F32(std::vector<float>(18, 1), {1, 2, 3, 3}),
                              F32(std::vector<float>(12, 1), {1, 3, 2, 2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunOp("Conv2D", {F32({1, 2, 3}, {3}), F32({1}, {1, 1, 1, 1})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("rank 4"));
}

TEST(PoolKernelTest, MaxPoolWithPaddingIgnoresPads) {
  // 3x3 of -9..-1, kernel 2, stride 2, pad 1 on all sides: windows hold
  // 1, 2, 2 and 4 real cells.
  std::vector<float> x;
  for (int i = -9; i < 0; ++i) x.push_back(static_cast<float>(i));
  auto out = RunOp("MaxPool", {F32(x, {1, 1, 3, 3})},
                   {{"kernel_shape", IntListAttr({2, 2})},
                    {"strides", IntListAttr({2, 2})},
                    {"pads", IntListAttr({1, 1, 1, 1})}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {1, 1, 2, 2}, {-9, -7, -3, -1});
}

TEST(PoolKernelTest, AvgPoolCountIncludePad) {
  // 2x2 of 1..4, kernel 2, stride 1, pad 1 top/left only: 2x2 output.
  Tensor x = F32({1, 2, 3, 4}, {1, 1, 2, 2});
  Attrs attrs = {{"kernel_shape", IntListAttr({2, 2})},
                 {"pads", IntListAttr({1, 1, 0, 0})}};
  auto excl = RunOp("AvgPool", {x}, attrs);
  attrs["count_include_pad"] = BoolAttr(true);
  auto incl = RunOp("AvgPool", {x}, attrs);
  ASSERT_TRUE(excl.ok() && incl.ok()) << excl.status() << incl.status();
  ExpectTensor((*excl)[0], {1, 1, 2, 2}, {1, 1.5, 2, 2.5}, 1e-6);
  ExpectTensor((*incl)[0], {1, 1, 2, 2}, {0.25, 0.75, 1, 2.5}, 1e-6);
}

TEST(PoolKernelTest, MaxPoolMatchesNaiveWithStrides) {
  auto x = Pattern(2 * 3 * 7 * 6, 13);
  auto out = RunOp("MaxPool", {MakeTensor(DT_FLOAT, {2, 3, 7, 6}, x)},
                   {{"kernel_shape", IntListAttr({3, 2})},
                    {"strides", IntListAttr({2, 2})}});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> want;
  for (int c = 0; c < 6; ++c)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        double m = -INFINITY;
        for (int u = 0; u < 3; ++u)
          for (int v = 0; v < 2; ++v)
            m = std::max(m, x[(c * 7 + i * 2 + u) * 6 + j * 2 + v]);
        want.push_back(m);
      }
  ExpectTensor((*out)[0], {2, 3, 3, 3}, want);
}

// MaxPool against the window definition for strides 1 to 3, uneven pads and
// kernels, on 1 and 3 threads; a NaN anywhere in a window is its maximum.
TEST(PoolKernelTest, MaxPoolMatchesNaiveWithPadsStridesAndNaN) {
  struct Case {
    int n, c, h, w, kh, kw, sh, sw, pt, pl, pb, pr;
  };
  const Case cases[] = {{1, 3, 13, 17, 3, 3, 2, 2, 1, 1, 1, 1},
                        {2, 2, 9, 8, 2, 3, 1, 1, 0, 2, 1, 0},
                        {1, 4, 11, 10, 3, 2, 3, 2, 2, 1, 0, 1}};
  for (const Case& p : cases) {
    auto x = Pattern(p.n * p.c * p.h * p.w, 23);
    x[5] = NAN;  // in the first plane's first row
    const int oh = (p.h + p.pt + p.pb - p.kh) / p.sh + 1;
    const int ow = (p.w + p.pl + p.pr - p.kw) / p.sw + 1;
    std::vector<double> want;
    for (int c = 0; c < p.n * p.c; ++c)
      for (int i = 0; i < oh; ++i)
        for (int j = 0; j < ow; ++j) {
          double m = -INFINITY;
          for (int u = 0; u < p.kh; ++u)
            for (int v = 0; v < p.kw; ++v) {
              const int iy = i * p.sh - p.pt + u, ix = j * p.sw - p.pl + v;
              if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
              const double e = x[(c * p.h + iy) * p.w + ix];
              m = (e > m || std::isnan(e)) ? e : m;
            }
          want.push_back(m);
        }
    for (int threads : {1, 3}) {
      RunOptions opts;
      opts.intra_op_threads = threads;
      auto out = RunOp("MaxPool", {MakeTensor(DT_FLOAT, {p.n, p.c, p.h, p.w}, x)},
                       {{"kernel_shape", IntListAttr({p.kh, p.kw})},
                        {"strides", IntListAttr({p.sh, p.sw})},
                        {"pads", IntListAttr({p.pt, p.pl, p.pb, p.pr})}},
                       opts);
      ASSERT_TRUE(out.ok()) << out.status();
      const float* y = (*out)[0].data<float>();
      ASSERT_EQ((*out)[0].NumElements(), static_cast<int64_t>(want.size()));
      for (size_t i = 0; i < want.size(); ++i) {
        if (std::isnan(want[i])) {
          EXPECT_TRUE(std::isnan(y[i])) << i;
        } else {
          EXPECT_EQ(y[i], want[i]) << i;
        }
      }
    }
  }
}

TEST(PoolKernelTest, PadAsLargeAsKernelIsAnError) {
  auto out = RunOp("MaxPool", {F32({1, 2, 3, 4}, {1, 1, 2, 2})},
                   {{"kernel_shape", IntListAttr({1, 1})},
                    {"pads", IntListAttr({1, 0, 0, 0})}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("pads"));
}

TEST(PoolKernelTest, GlobalAvgPool) {
  auto out = RunOp("GlobalAvgPool",
                   {F32({1, 2, 3, 4, 10, 20, 30, 40}, {1, 2, 2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectTensor((*out)[0], {1, 2, 1, 1}, {2.5, 25});
  auto bad = RunOp("GlobalAvgPool", {F32({1, 2}, {1, 2})});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sluice::testing::conv_pool_test
