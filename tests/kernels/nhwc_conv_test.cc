// NHWC (data_format, graph/data_format.h) convolutions and pools.
// CPU: on the kernels' own loops each NHWC node gives exactly the NCHW
// node's result on the same values laid out channels last
// (kernels/cpu/layout.h), across strides, pads, dilations, groups,
// depthwise, 1x1, bias, side input and Relu, at batch 1 and 3; on oneDNN
// channels last (the default) the same to rounding; a bad data_format is a
// clear error. GPU (skipped without
// one): every route an NHWC convolution can take (cuDNN's legacy calls with
// NHWC descriptors, its fused call, the graph API's plans, the 1x1 GEMM,
// and the direct kernels with cuDNN off) against the CPU, in float32,
// float16 and bfloat16; cuDNN ran each ungrouped symmetric problem under an
// NHWC key of its own, and the 1x1 ones as a GEMM too.
#include <array>
#include <cmath>
#include <iostream>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "device/cudnn_info.h"
#include "device/discovery.h"
#include "device/gpu_device.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"
#include "kernels/cpu/onednn_conv.h"
#include "kernels/cpu/onednn_conv_nhwc.h"
#include "testing/compare.h"
#include "testing/gpu_required.h"
#ifdef SLUICE_WITH_CUDA
#include "kernels/cuda/cudnn_conv.h"
#endif

namespace sluice::nhwc_conv_test {
namespace {

using ::sluice::testing::Attrs;
using ::sluice::testing::BoolAttr;
using ::sluice::testing::IntAttr;
using ::sluice::testing::IntListAttr;
using ::sluice::testing::MakeTensor;
using ::sluice::testing::RunOp;
using ::sluice::testing::SetTestCpuConvolutions;
using ::sluice::testing::TestCpuProvider;
using ::sluice::testing::StringAttr;
using ::sluice::testing::ToDoubles;

// An NCHW problem; the NHWC one is its tensors permuted (filter
// [O,I,KH,KW] -> [O,KH,KW,I]) with data_format NHWC.
struct NhwcCase {
  std::string name;
  std::string op;            // Conv2D, FusedConv2D, MaxPool, AvgPool
  std::vector<Shape> nchw;   // input shapes as NCHW ops take them
  Attrs attrs;               // without data_format
  bool one_by_one = false;   // a 1x1 convolution (the GEMM route)
};

Attrs Window(std::vector<int64_t> s, std::vector<int64_t> p,
             std::vector<int64_t> d, int64_t group = 1) {
  return {{"strides", IntListAttr(s)}, {"pads", IntListAttr(p)},
          {"dilations", IntListAttr(d)}, {"group", IntAttr(group)}};
}

std::vector<NhwcCase> Cases() {
  std::vector<NhwcCase> c;
  for (int64_t b : {1, 3}) {
    const std::string n = absl::StrCat("_b", b);
    c.push_back({"Conv2D_3x3" + n, "Conv2D", {Shape({b, 8, 7, 6}), Shape({16, 8, 3, 3})},
                 Window({1, 1}, {1, 1, 1, 1}, {1, 1})});
    c.push_back({"Conv2D_strided_padded" + n, "Conv2D",
                 {Shape({b, 3, 11, 10}), Shape({8, 3, 5, 5})},
                 Window({2, 2}, {2, 2, 2, 2}, {1, 1})});
    c.push_back({"Conv2D_dilated_grouped" + n, "Conv2D",
                 {Shape({b, 8, 11, 9}), Shape({12, 2, 3, 3})},
                 Window({1, 2}, {2, 2, 2, 2}, {2, 2}, 4)});
    c.push_back({"Conv2D_asymmetric_pads" + n, "Conv2D",
                 {Shape({b, 4, 9, 8}), Shape({6, 2, 3, 3})},
                 Window({2, 1}, {1, 1, 0, 2}, {1, 2}, 2)});
    // Dilated past the image (DeepLabV3's ASPP): only the centre taps
    // read it, on both axes, or on the rows alone.
    c.push_back({"Conv2D_dilated_taps_in_padding" + n, "Conv2D",
                 {Shape({b, 8, 5, 5}), Shape({16, 8, 3, 3})},
                 Window({1, 1}, {6, 6, 6, 6}, {6, 6})});
    c.push_back({"Conv2D_dilated_rows_in_padding" + n, "Conv2D",
                 {Shape({b, 8, 5, 12}), Shape({16, 8, 3, 3})},
                 Window({1, 1}, {6, 1, 6, 1}, {6, 1})});
    c.push_back({"Conv2D_depthwise" + n, "Conv2D",
                 {Shape({b, 16, 10, 10}), Shape({16, 1, 3, 3})},
                 Window({1, 1}, {1, 1, 1, 1}, {1, 1}, 16)});
    c.push_back({"Conv2D_depthwise_multiplier_strided" + n, "Conv2D",
                 {Shape({b, 8, 9, 9}), Shape({16, 1, 5, 5})},
                 Window({2, 2}, {2, 2, 2, 2}, {1, 1}, 8)});
    c.push_back({"Conv2D_1x1" + n, "Conv2D", {Shape({b, 24, 9, 7}), Shape({40, 24, 1, 1})},
                 {}, /*one_by_one=*/true});
    c.push_back({"Conv2D_1x1_strided" + n, "Conv2D",
                 {Shape({b, 16, 8, 8}), Shape({32, 16, 1, 1})},
                 Window({2, 2}, {0, 0, 0, 0}, {1, 1})});
    Attrs relu = Window({1, 1}, {1, 1, 1, 1}, {1, 1});
    relu["activation"] = StringAttr("relu");
    c.push_back({"FusedConv2D_bias_relu" + n, "FusedConv2D",
                 {Shape({b, 8, 7, 7}), Shape({16, 8, 3, 3}), Shape({16})}, relu});
    c.push_back({"FusedConv2D_residual_relu" + n, "FusedConv2D",
                 {Shape({b, 8, 7, 7}), Shape({16, 8, 3, 3}), Shape({16}),
                  Shape({b, 16, 7, 7})},
                 relu});
    Attrs relu6 = Window({1, 1}, {1, 1, 1, 1}, {1, 1});
    relu6["activation"] = StringAttr("relu6");
    c.push_back({"FusedConv2D_residual_relu6" + n, "FusedConv2D",
                 {Shape({b, 32, 7, 7}), Shape({16, 32, 3, 3}), Shape({16}),
                  Shape({b, 16, 7, 7})},
                 relu6});
    Attrs plain = Window({2, 2}, {1, 1, 1, 1}, {1, 1}, 2);
    c.push_back({"FusedConv2D_grouped_strided_bias" + n, "FusedConv2D",
                 {Shape({b, 8, 9, 9}), Shape({12, 4, 3, 3}), Shape({12})}, plain});
    Attrs one = {{"activation", StringAttr("relu")}};
    c.push_back({"FusedConv2D_1x1_residual_relu" + n, "FusedConv2D",
                 {Shape({b, 24, 9, 7}), Shape({40, 24, 1, 1}), Shape({40}),
                  Shape({b, 40, 9, 7})},
                 one, /*one_by_one=*/true});
    // MobileNetV3's and EfficientNet's activations (conv_activation.h).
    for (const char* act : {"hardswish", "hardsigmoid", "sigmoid", "silu"}) {
      Attrs dw = Window({1, 1}, {2, 2, 2, 2}, {1, 1}, 16);
      dw["activation"] = StringAttr(act);
      c.push_back({absl::StrCat("FusedConv2D_depthwise_", act, n), "FusedConv2D",
                   {Shape({b, 16, 9, 9}), Shape({16, 1, 5, 5}), Shape({16})}, dw});
      Attrs pw = {{"activation", StringAttr(act)}};
      c.push_back({absl::StrCat("FusedConv2D_1x1_residual_", act, n), "FusedConv2D",
                   {Shape({b, 24, 5, 7}), Shape({40, 24, 1, 1}), Shape({40}),
                    Shape({b, 40, 5, 7})},
                   pw, /*one_by_one=*/true});
    }
    c.push_back({"MaxPool_3x3_s2" + n, "MaxPool", {Shape({b, 5, 9, 9})},
                 {{"kernel_shape", IntListAttr({3, 3})}, {"strides", IntListAttr({2, 2})},
                  {"pads", IntListAttr({1, 1, 1, 1})}}});
    c.push_back({"AvgPool_include_pad" + n, "AvgPool", {Shape({b, 3, 6, 7})},
                 {{"kernel_shape", IntListAttr({3, 3})}, {"pads", IntListAttr({1, 1, 1, 1})},
                  {"count_include_pad", BoolAttr(true)}}});
    c.push_back({"AvgPool_asymmetric" + n, "AvgPool", {Shape({b, 4, 5, 5})},
                 {{"kernel_shape", IntListAttr({2, 2})}, {"pads", IntListAttr({0, 0, 1, 1})}}});
  }
  return c;
}

// t (rank 4) permuted: dim i of the result is dim perm[i] of t. Written
// here, independently of the kernels' permutation code.
std::vector<double> Permute(const std::vector<double>& v, const Shape& s,
                            const std::array<int, 4>& perm, Shape* out_shape) {
  const Shape o({s.dim(perm[0]), s.dim(perm[1]), s.dim(perm[2]), s.dim(perm[3])});
  std::vector<double> out(v.size());
  int64_t idx[4];
  for (idx[0] = 0; idx[0] < o.dim(0); ++idx[0]) {
    for (idx[1] = 0; idx[1] < o.dim(1); ++idx[1]) {
      for (idx[2] = 0; idx[2] < o.dim(2); ++idx[2]) {
        for (idx[3] = 0; idx[3] < o.dim(3); ++idx[3]) {
          int64_t src[4];
          for (int d = 0; d < 4; ++d) src[perm[d]] = idx[d];
          const int64_t from =
              ((src[0] * s.dim(1) + src[1]) * s.dim(2) + src[2]) * s.dim(3) + src[3];
          const int64_t to =
              ((idx[0] * o.dim(1) + idx[1]) * o.dim(2) + idx[2]) * o.dim(3) + idx[3];
          out[to] = v[from];
        }
      }
    }
  }
  *out_shape = o;
  return out;
}

constexpr std::array<int, 4> kToNhwc = {0, 2, 3, 1};

// The case's NCHW inputs (values in [-1, 1], seeded by name, rounded to
// `dtype`) and the same values channels last.
void MakeInputs(const NhwcCase& c, DataType dtype, std::vector<Tensor>* nchw,
                std::vector<Tensor>* nhwc) {
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(c.name) & 0xffff));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (const Shape& s : c.nchw) {
    std::vector<double> v(s.num_elements());
    for (double& e : v) e = u(rng);
    Tensor t = MakeTensor(dtype, s, v);
    nchw->push_back(t);
    if (s.rank() != 4) {
      nhwc->push_back(t);  // the bias
      continue;
    }
    Shape ps;
    std::vector<double> p = Permute(ToDoubles(t), s, kToNhwc, &ps);
    nhwc->push_back(MakeTensor(dtype, ps, p));
  }
}

Attrs WithNhwc(Attrs a) {
  a["data_format"] = StringAttr("NHWC");
  return a;
}

// Through the tests' one comparator (testing/compare.h): NaN only against
// NaN, infinities by sign, finite values within rtol * (1 + |want|).
void ExpectClose(const Tensor& got, const std::vector<double>& want,
                 const Shape& shape, double rtol, const std::string& what) {
  ASSERT_EQ(got.shape(), shape) << what;
  EXPECT_EQ(::sluice::testing::CompareValues(
                ToDoubles(got), want, got.dtype(),
                ::sluice::testing::RelativeAndAbsolute(rtol)),
            "")
      << what;
}

// The CPU kernels' own loops (CpuConvPath::kLoops): an NHWC convolution
// is then the NCHW computation between permutations, bit for bit.
class NhwcCpuTest : public ::testing::TestWithParam<NhwcCase> {
 protected:
  void SetUp() override { SetTestCpuConvolutions(CpuConvPath::kLoops); }
  void TearDown() override { SetTestCpuConvolutions(CpuConvPath::kAuto); }
};

// The NHWC node's output is the NCHW node's output permuted.
TEST_P(NhwcCpuTest, MatchesTheNchwNodeOnPermutedTensors) {
  const NhwcCase& c = GetParam();
  std::vector<Tensor> nchw, nhwc;
  MakeInputs(c, DT_FLOAT, &nchw, &nhwc);
  absl::StatusOr<std::vector<Tensor>> ref = RunOp(c.op, nchw, c.attrs);
  ASSERT_TRUE(ref.ok()) << ref.status();
  absl::StatusOr<std::vector<Tensor>> got = RunOp(c.op, nhwc, WithNhwc(c.attrs));
  ASSERT_TRUE(got.ok()) << got.status();
  Shape want_shape;
  std::vector<double> want =
      Permute(ToDoubles((*ref)[0]), (*ref)[0].shape(), kToNhwc, &want_shape);
  // The same kernel on the same values: the same floats.
  ExpectClose((*got)[0], want, want_shape, 0.0, c.name);
  // Shape inference agrees with the kernel (known input shapes).
  absl::StatusOr<std::vector<Tensor>> known =
      RunOp(c.op, nhwc, WithNhwc(c.attrs), {.known_shapes = true});
  ASSERT_TRUE(known.ok()) << known.status();
}

TEST_P(NhwcCpuTest, Float16RunsThroughTheFloat32Fallback) {
  const NhwcCase& c = GetParam();
  std::vector<Tensor> nchw, nhwc;
  MakeInputs(c, DT_FLOAT16, &nchw, &nhwc);
  absl::StatusOr<std::vector<Tensor>> ref = RunOp(c.op, nchw, c.attrs);
  ASSERT_TRUE(ref.ok()) << ref.status();
  absl::StatusOr<std::vector<Tensor>> got = RunOp(c.op, nhwc, WithNhwc(c.attrs));
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ((*got)[0].dtype(), DT_FLOAT16);
  Shape want_shape;
  std::vector<double> want =
      Permute(ToDoubles((*ref)[0]), (*ref)[0].shape(), kToNhwc, &want_shape);
  ExpectClose((*got)[0], want, want_shape, 0.0, c.name);
}

INSTANTIATE_TEST_SUITE_P(Layouts, NhwcCpuTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<NhwcCase>& info) {
                           return info.param.name;
                         });

// The default mode: NHWC convolutions run on oneDNN channels last in place
// (kernels/cpu/onednn_conv_nhwc.h) and match the NCHW loops to rounding;
// oneDNN takes every ungrouped case (the counter shows it ran), and a
// grouped one it declines runs between permutations. Pools are bit for bit.
TEST_P(NhwcCpuTest, OneDnnChannelsLastMatchesTheLoops) {
  const NhwcCase& c = GetParam();
  std::vector<Tensor> nchw, nhwc;
  MakeInputs(c, DT_FLOAT, &nchw, &nhwc);
  absl::StatusOr<std::vector<Tensor>> ref = RunOp(c.op, nchw, c.attrs);
  ASSERT_TRUE(ref.ok()) << ref.status();
  SetTestCpuConvolutions(CpuConvPath::kAuto);
  if (!cpu::OneDnnConvolutionsBuiltIn()) {
    GTEST_SKIP() << "this build has no oneDNN convolution";
  }
  const int64_t runs = cpu::OneDnnConvNhwcRuns();
  absl::StatusOr<std::vector<Tensor>> got = RunOp(c.op, nhwc, WithNhwc(c.attrs));
  ASSERT_TRUE(got.ok()) << got.status();
  const bool conv = absl::StrContains(c.op, "Conv");
  const bool grouped = c.attrs.count("group") > 0 &&
                       c.attrs.at("group").i() > 1;
  if (conv && !grouped) {
    EXPECT_EQ(cpu::OneDnnConvNhwcRuns(), runs + 1) << c.name;
  }
  Shape want_shape;
  std::vector<double> want =
      Permute(ToDoubles((*ref)[0]), (*ref)[0].shape(), kToNhwc, &want_shape);
  ExpectClose((*got)[0], want, want_shape, conv ? 1e-5 : 0.0, c.name);
}

// Runs `c` NHWC at `threads` intra-op threads, expecting one call on
// oneDNN, against the NCHW loops at one thread, to `rtol`.
void ExpectOneDnnCallMatchesTheLoops(const NhwcCase& c, int threads,
                                     double rtol) {
  std::vector<Tensor> nchw, nhwc;
  MakeInputs(c, DT_FLOAT, &nchw, &nhwc);
  SetTestCpuConvolutions(CpuConvPath::kLoops);
  absl::StatusOr<std::vector<Tensor>> ref = RunOp(c.op, nchw, c.attrs);
  SetTestCpuConvolutions(CpuConvPath::kAuto);
  ASSERT_TRUE(ref.ok()) << ref.status();
  const int64_t runs = cpu::OneDnnConvNhwcRuns();
  ::sluice::testing::RunOptions options;
  options.intra_op_threads = threads;
  absl::StatusOr<std::vector<Tensor>> got =
      RunOp(c.op, nhwc, WithNhwc(c.attrs), options);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(cpu::OneDnnConvNhwcRuns(), runs + 1);
  Shape want_shape;
  std::vector<double> want =
      Permute(ToDoubles((*ref)[0]), (*ref)[0].shape(), kToNhwc, &want_shape);
  ExpectClose((*got)[0], want, want_shape, rtol, c.name);
}

// With two intra-op threads an NHWC call on oneDNN is cut into bands of
// output rows, or runs of output channels where a filter of 1 MiB or more
// outweighs the output, for the pool (onednn_conv_nhwc.h; large enough problems: each
// slice at least kMinConvSliceMacs): strided, dilated and padded windows,
// a residual and an activation, each band reading its rows in place, match
// the NCHW loops at one thread.
TEST(NhwcOneDnnBandsTest, TwoThreadsCutIntoBandsMatchTheLoops) {
  if (!cpu::OneDnnConvolutionsBuiltIn()) {
    GTEST_SKIP() << "this build has no oneDNN convolution";
  }
  std::vector<NhwcCase> cases;
  Attrs strided = Window({2, 2}, {1, 1, 1, 1}, {1, 1});
  strided["activation"] = StringAttr("hardswish");
  cases.push_back({"strided_residual_hardswish", "FusedConv2D",
                   {Shape({1, 32, 17, 15}), Shape({32, 32, 3, 3}), Shape({32}),
                    Shape({1, 32, 9, 8})},
                   strided});
  Attrs dilated = Window({1, 1}, {2, 2, 2, 2}, {2, 2});
  dilated["activation"] = StringAttr("relu6");
  cases.push_back({"dilated_relu6", "FusedConv2D",
                   {Shape({1, 32, 20, 20}), Shape({32, 32, 3, 3}), Shape({32})},
                   dilated});
  Attrs uneven = Window({1, 1}, {0, 1, 2, 1}, {1, 1});
  uneven["activation"] = StringAttr("silu");
  cases.push_back({"uneven_pads_silu", "FusedConv2D",
                   {Shape({1, 32, 23, 16}), Shape({48, 32, 3, 3}), Shape({48})},
                   uneven});
  // A filter of 1 MiB or more that outweighs the output (2,304 floats an
  // output channel, 25 positions): runs of output channels, each into a
  // buffer of its own copied into y; with a residual the copy adds it and
  // activates.
  Attrs small = Window({1, 1}, {1, 1, 1, 1}, {1, 1});
  small["activation"] = StringAttr("hardswish");
  cases.push_back({"channel_runs_residual_hardswish", "FusedConv2D",
                   {Shape({1, 256, 5, 5}), Shape({128, 256, 3, 3}),
                    Shape({128}), Shape({1, 128, 5, 5})},
                   small});
  // SiLU is applied by sluice after the call (not oneDNN's swish post-op):
  // here over a channel run's own buffer before it is copied into y.
  Attrs runs_silu = Window({1, 1}, {1, 1, 1, 1}, {1, 1});
  runs_silu["activation"] = StringAttr("silu");
  cases.push_back({"channel_runs_silu", "FusedConv2D",
                   {Shape({1, 256, 5, 5}), Shape({128, 256, 3, 3}),
                    Shape({128})},
                   runs_silu});
  Attrs small_relu = Window({2, 2}, {0, 0, 0, 0}, {1, 1});
  small_relu["activation"] = StringAttr("relu");
  cases.push_back({"channel_runs_strided_1x1_relu", "FusedConv2D",
                   {Shape({1, 1024, 6, 6}), Shape({256, 1024, 1, 1}),
                    Shape({256})},
                   small_relu});
  for (const NhwcCase& c : cases) {
    SCOPED_TRACE(c.name);
    // The channel runs' sums have 1,024 and 2,304 terms (the others 288
    // to 432), summed in another order than the loops'.
    const double rtol = absl::StartsWith(c.name, "channel_runs") ? 1e-4 : 1e-5;
    ExpectOneDnnCallMatchesTheLoops(c, /*threads=*/2, rtol);
  }
}

// With more than two intra-op threads a call is one primitive on an
// OpenMP team, and SiLU, applied by sluice after it, runs in chunks on the
// pool: an output of 147,456 floats (nine chunks) matches the NCHW loops.
TEST(NhwcOneDnnBandsTest, FourThreadsRunOneTeamCallWithSiluAfterIt) {
  if (!cpu::OneDnnConvolutionsBuiltIn()) {
    GTEST_SKIP() << "this build has no oneDNN convolution";
  }
  Attrs attrs = Window({1, 1}, {1, 1, 1, 1}, {1, 1});
  attrs["activation"] = StringAttr("silu");
  const NhwcCase c = {"team_silu", "FusedConv2D",
                      {Shape({1, 16, 48, 48}), Shape({64, 16, 3, 3}),
                       Shape({64})},
                      attrs};
  ExpectOneDnnCallMatchesTheLoops(c, /*threads=*/4, 1e-5);
}

// 3 x 3 windows at stride 1 with enough work, a filter of at most 1 MiB
// and a small scratchpad run on oneDNN's Winograd convolution where this
// CPU has one (AVX-512): a whole image at one thread, and on a team at
// four. At two threads a batch-1 call is cut into bands, whose uneven
// padding only F(4x4, 3x3) takes, with a 7 MB scratchpad: those stay
// direct, as does a larger filter (Winograd's copy of it would be too
// large). Each matches the NCHW loops; the slices' counter says which ran.
TEST(NhwcOneDnnWinogradTest, ThreeByThreeWindowsMatchTheLoops) {
  if (!cpu::OneDnnConvolutionsBuiltIn()) {
    GTEST_SKIP() << "this build has no oneDNN convolution";
  }
  Attrs relu = Window({1, 1}, {1, 1, 1, 1}, {1, 1});
  relu["activation"] = StringAttr("relu");
  Attrs silu = Window({1, 1}, {1, 1, 1, 1}, {1, 1});
  silu["activation"] = StringAttr("silu");
  struct Case {
    NhwcCase c;
    bool winograd;  // at one and four threads
  };
  const std::vector<Case> cases = {
      {{"bias_relu", "FusedConv2D",
        {Shape({1, 32, 28, 27}), Shape({64, 32, 3, 3}), Shape({64})}, relu},
       true},
      {{"plain", "Conv2D", {Shape({1, 16, 24, 24}), Shape({48, 16, 3, 3})},
        Window({1, 1}, {1, 1, 1, 1}, {1, 1})},
       true},
      {{"bias_silu", "FusedConv2D",
        {Shape({1, 64, 20, 20}), Shape({96, 64, 3, 3}), Shape({96})}, silu},
       true},
      // A 1.2 MB filter (in runs of output channels at two threads).
      {{"large_filter", "FusedConv2D",
        {Shape({1, 256, 10, 10}), Shape({128, 256, 3, 3}), Shape({128})},
        relu},
       false},
  };
  const bool has = cpu::OneDnnConvNhwcHasWinograd();
  for (int threads : {1, 2, 4}) {
    for (const Case& k : cases) {
      SCOPED_TRACE(absl::StrCat(k.c.name, " at ", threads, " threads"));
      const int64_t before = cpu::OneDnnConvNhwcWinogradSlices();
      // Winograd's transforms add and subtract inputs and filter taps
      // before the products: its error follows the sum of the terms'
      // magnitudes (144 to 2,304 terms of up to 1 here), not the output's,
      // and reached 1.8e-5 on outputs near 0.4 (the direct convolution's
      // 1e-5 bound). A slice reordered from the wrong rows, or written to
      // them, is off by the outputs themselves.
      ExpectOneDnnCallMatchesTheLoops(k.c, threads, 1e-4);
      const int64_t ran = cpu::OneDnnConvNhwcWinogradSlices() - before;
      // Without AVX-512 oneDNN has no Winograd convolution: every call
      // ran the direct one (checked above).
      const bool want = has && k.winograd && threads != 2;
      EXPECT_EQ(ran, want ? 1 : 0);
    }
  }
  if (!has) GTEST_SKIP() << "oneDNN has no Winograd convolution on this CPU";
}

TEST(NhwcAttrTest, AnUnknownDataFormatIsAClearError) {
  const Tensor x = MakeTensor(DT_FLOAT, Shape({1, 4, 4, 2}), std::vector<double>(32, 1.0));
  const Tensor w = MakeTensor(DT_FLOAT, Shape({3, 1, 1, 2}), std::vector<double>(6, 1.0));
  for (const char* op : {"Conv2D", "MaxPool"}) {
    SCOPED_TRACE(op);
    Attrs attrs = {{"data_format", StringAttr("NWHC")}};
    std::vector<Tensor> in = {x};
    if (std::string(op) == "Conv2D") {
      in.push_back(w);
    } else {
      attrs["kernel_shape"] = IntListAttr({2, 2});
    }
    absl::StatusOr<std::vector<Tensor>> r = RunOp(op, in, attrs, {.known_shapes = true});
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
    EXPECT_THAT(std::string(r.status().message()),
                ::testing::HasSubstr("data_format must be \"NCHW\" or \"NHWC\", got \"NWHC\""));
  }
}

TEST(NhwcAttrTest, ChannelsThatDoNotMatchNameTheLayout) {
  // NHWC input of 2 channels, an [O,KH,KW,I] filter of 3.
  const Tensor x = MakeTensor(DT_FLOAT, Shape({1, 4, 4, 2}), std::vector<double>(32, 1.0));
  const Tensor w = MakeTensor(DT_FLOAT, Shape({3, 1, 1, 3}), std::vector<double>(9, 1.0));
  absl::StatusOr<std::vector<Tensor>> r =
      RunOp("Conv2D", {x, w}, {{"data_format", StringAttr("NHWC")}}, {.known_shapes = true});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("NHWC"));
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("[O,KH,KW,C/group]"));
}

#ifdef SLUICE_WITH_CUDA

using ::sluice::testing::RunOpOnGpu;

absl::StatusOr<std::unique_ptr<GpuDevice>> MakeGpu(bool use_cudnn) {
  DeviceInventory inv = DiscoverDevices();
  if (inv.gpus.empty()) {
    return absl::UnavailableError(absl::StrCat("no GPU: ", inv.no_gpu_reason));
  }
  RuntimeConfig config;
  config.set_allow_growth(true);
  config.set_allow_tf32(false);
  config.set_use_cudnn(use_cudnn);
  ASSIGN_OR_RETURN(std::vector<std::unique_ptr<GpuDevice>> gpus,
                   CreateGpuDevicesFromSpecs(config, {{0, int64_t{2} << 30}}));
  return std::move(gpus[0]);
}

struct Gpus {
  std::unique_ptr<GpuDevice> cudnn;     // use_cudnn, TF32 off
  std::unique_ptr<GpuDevice> fallback;  // use_cudnn false
  std::string skip_reason;
};

const Gpus& GetGpus() {
  static const Gpus* gpus = [] {
    auto* g = new Gpus();
    auto a = MakeGpu(true);
    auto b = MakeGpu(false);
    if (!a.ok() || !b.ok()) {
      g->skip_reason = (!a.ok() ? a.status() : b.status()).ToString();
      return g;
    }
    g->cudnn = *std::move(a);
    g->fallback = *std::move(b);
    return g;
  }();
  return *gpus;
}

struct GpuCase {
  NhwcCase conv;
  DataType dtype;
};

// The CPU's cases but those with an activation only the CPU's FusedConv2D
// takes (the optimizer fuses them for a CPU target alone).
std::vector<GpuCase> GpuCases() {
  std::vector<GpuCase> out;
  for (const NhwcCase& c : Cases()) {
    auto act = c.attrs.find("activation");
    if (act != c.attrs.end() && act->second.s() != "relu" &&
        act->second.s() != "relu6" && act->second.s() != "none") {
      continue;
    }
    for (DataType t : {DT_FLOAT, DT_FLOAT16, DT_BFLOAT16}) out.push_back({c, t});
  }
  return out;
}

double Tolerance(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT16: return 1e-2;
    case DT_BFLOAT16: return 2e-2;
    default: return 1e-4;
  }
}

class NhwcGpuTest : public ::testing::TestWithParam<GpuCase> {};

// Every route, each against the CPU's NHWC node on the same rounded values.
TEST_P(NhwcGpuTest, EveryRouteMatchesTheCpu) {
  const NhwcCase& c = GetParam().conv;
  const DataType dtype = GetParam().dtype;
  const Gpus& gpus = GetGpus();
  if (gpus.cudnn == nullptr) SLUICE_GPU_UNAVAILABLE(gpus.skip_reason);
  std::vector<Tensor> nchw, nhwc;
  MakeInputs(c, dtype, &nchw, &nhwc);
  std::vector<Tensor> nhwc32;
  for (const Tensor& t : nhwc) nhwc32.push_back(MakeTensor(DT_FLOAT, t.shape(), ToDoubles(t)));
  const Attrs attrs = WithNhwc(c.attrs);
  absl::StatusOr<std::vector<Tensor>> cpu = RunOp(c.op, nhwc32, attrs);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  const std::vector<double> ref = ToDoubles((*cpu)[0]);
  const Shape& shape = (*cpu)[0].shape();

  absl::StatusOr<std::vector<Tensor>> fallback = RunOpOnGpu(gpus.fallback.get(), c.op, nhwc, attrs);
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  ExpectClose((*fallback)[0], ref, shape, Tolerance(dtype), c.name + " direct kernels");

  const bool conv = c.op == "Conv2D" || c.op == "FusedConv2D";
  const struct { cuda::CudnnPathPolicy policy; const char* name; } routes[] = {
      {cuda::CudnnPathPolicy::kMeasure, "measured"},
      {cuda::CudnnPathPolicy::kFused, "fused call"},
      {cuda::CudnnPathPolicy::kGemm, "1x1 GEMM"},
      {cuda::CudnnPathPolicy::kGraph, "graph API"},
  };
  for (const auto& route : routes) {
    if (!conv && route.policy != cuda::CudnnPathPolicy::kMeasure) continue;
    // Refused only where cuDNN is not usable (the direct kernels run).
    absl::Status set = cuda::SetCudnnPathPolicyForTesting(gpus.cudnn.get(), route.policy);
    if (!set.ok()) {
      ASSERT_FALSE(GetCudnnInfo().usable) << set;
    }
    absl::StatusOr<std::vector<Tensor>> got = RunOpOnGpu(gpus.cudnn.get(), c.op, nhwc, attrs);
    if (set.ok()) {
      EXPECT_TRUE(cuda::SetCudnnPathPolicyForTesting(gpus.cudnn.get(),
                                                     cuda::CudnnPathPolicy::kMeasure)
                      .ok());
    }
    ASSERT_TRUE(got.ok()) << route.name << ": " << got.status();
    ExpectClose((*got)[0], ref, shape, Tolerance(dtype), c.name + " " + route.name);
  }
  if (!conv) return;
  if (!GetCudnnInfo().usable) {
    GTEST_SKIP() << "cuDNN is not usable (" << GetCudnnInfo().reason
                 << "): only the direct kernels were checked";
  }
  // cuDNN ran this NHWC problem, under a key of its own (dtype, layout,
  // sizes: CacheKey in cudnn_conv.cc). Required where cuDNN surely takes
  // it (one group, symmetric pads); printed for the grouped ones.
  const Shape& x = nhwc[0].shape();
  const Shape& w = nhwc[1].shape();
  const int64_t group = c.attrs.count("group") ? c.attrs.at("group").i() : 1;
  const std::string key = absl::StrCat(DataTypeName(dtype), " NHWC2d n=", x.dim(0),
                                       " c=", x.dim(3), "->", w.dim(0), " g=", group,
                                       " image=", x.dim(1), ",", x.dim(2), " ");
  int64_t runs = 0, gemm_runs = 0;
  for (const cuda::CudnnConvCacheEntry& e : cuda::CudnnConvCache(gpus.cudnn.get())) {
    if (!absl::StartsWith(e.key, key)) continue;
    runs += e.runs;
    gemm_runs += e.gemm_runs;
    std::cout << "[ cudnn    ] " << e.key << ": " << e.runs << " runs, " << e.gemm_runs
              << " as GEMM, " << e.graph_runs << " on the graph API"
              << (e.unsupported.empty() ? "" : ", refused: ") << e.unsupported << "\n";
  }
  const bool symmetric = c.name.find("asymmetric") == std::string::npos;
  if (symmetric && group == 1) {
    EXPECT_GT(runs, 0) << "cuDNN never ran " << key;
  }
  if (c.one_by_one) {
    EXPECT_GT(gemm_runs, 0) << "the 1x1 GEMM route never ran " << key;
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, NhwcGpuTest, ::testing::ValuesIn(GpuCases()),
                         [](const ::testing::TestParamInfo<GpuCase>& info) {
                           return absl::StrCat(info.param.conv.name, "_",
                                               DataTypeName(info.param.dtype));
                         });

TEST(NhwcCudnnCanExpressTest, TakesForward2dOnly) {
  cuda::CudnnConvProblem p;
  p.dtype = DT_FLOAT16;
  p.batch = 2;
  p.in_channels = 8;
  p.out_channels = 16;
  p.image = {7, 7};
  p.positions = {7, 7};
  p.kernel = {3, 3};
  p.strides = {1, 1};
  p.dilations = {1, 1};
  p.pad_begin = {1, 1};
  p.channels_last = true;
  EXPECT_TRUE(cuda::CudnnCanExpress(p).ok()) << cuda::CudnnCanExpress(p);
  cuda::CudnnConvProblem transpose = p;
  transpose.transpose = true;
  EXPECT_TRUE(absl::IsUnimplemented(cuda::CudnnCanExpress(transpose)));
  cuda::CudnnConvProblem three = p;
  three.image = three.positions = {5, 5, 5};
  three.kernel = {3, 3, 3};
  three.strides = three.dilations = {1, 1, 1};
  three.pad_begin = {1, 1, 1};
  EXPECT_TRUE(absl::IsUnimplemented(cuda::CudnnCanExpress(three)));
}

#endif  // SLUICE_WITH_CUDA

}  // namespace
}  // namespace sluice::nhwc_conv_test
