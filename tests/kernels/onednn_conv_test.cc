// kernels/cpu/onednn_conv.h: Conv2D and FusedConv2D on oneDNN's
// convolution primitive against conv.cc's own loops (the reference), seeded,
// over grouped, depthwise, dilated, strided, padded (asymmetric too), 1x1,
// batch 1 and 3, at 1 and 2 intra-op threads (2 cuts each image's output
// channels into one primitive per thread), with bias, residual (`sum`),
// Relu and ReLU6 (clip) post-ops; each case checks that oneDNN ran
// (OneDnnConvRuns; the cases run with CpuConvPath::kOneDnn, so that 1x1
// windows go to oneDNN too). The same cases again at 1, 2, 3, 7 and 16
// threads with the least slice work lowered to 1 multiply-add, so that
// images with fewer channel blocks than threads are cut into bands of
// output rows too (bands of different heights, the first and last with the
// image's padding), checked to be cut so (OneDnnConvRowSlicedRuns) where
// PlanConvSlicing says so; PlanConvSlicing's own choices beside them. A
// problem oneDNN only offers its im2col + GEMM for is declined and still
// runs, on the loops. The channels-last path (onednn_conv_nhwc.h) run from
// four threads at once matches them too. Builds without oneDNN skip.
#include "kernels/cpu/onednn_conv.h"
#include "kernels/cpu/onednn_conv_nhwc.h"
#include "kernels/cpu/omp_threads.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/status_macros.h"
#include "device/cpu_device.h"
#include "gtest/gtest.h"
#include "kernel_test_util.h"
#include "kernels/kernel.h"
#include "kernels/kernel_registry.h"

namespace sluice::onednn_conv_test {
namespace {

using ::sluice::testing::Attrs;
using ::sluice::testing::CompareValues;
using ::sluice::testing::RelativeAndAbsolute;
using ::sluice::testing::IntAttr;
using ::sluice::testing::IntListAttr;
using ::sluice::testing::RunOp;
using ::sluice::testing::SetTestCpuConvolutions;
using ::sluice::testing::TestCpuProvider;
using ::sluice::testing::RunOptions;
using ::sluice::testing::StringAttr;
using ::sluice::testing::ToDoubles;

struct Case {
  std::string name;
  int n, c, h, w, o, kh, kw, group;
  int sh, sw, pt, pl, pb, pr, dh, dw;
};

std::vector<Case> Cases() {
  return {
      {"plain3x3", 1, 16, 9, 9, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
      {"pointwise", 1, 64, 7, 7, 48, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},
      {"stem_strided", 1, 3, 17, 17, 16, 7, 7, 1, 2, 2, 3, 3, 3, 3, 1, 1},
      {"strided1x1", 1, 32, 8, 8, 24, 1, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1},
      {"dilated", 1, 16, 12, 11, 16, 3, 3, 1, 1, 1, 2, 2, 2, 2, 2, 2},
      {"asymmetric_pads", 1, 8, 10, 9, 20, 3, 2, 1, 1, 2, 0, 1, 2, 0, 1, 1},
      {"odd_channels", 1, 5, 6, 6, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
      {"grouped", 1, 32, 8, 8, 64, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1},
      {"grouped_blocks", 1, 64, 6, 6, 64, 3, 3, 4, 1, 1, 1, 1, 1, 1, 1, 1},
      {"depthwise", 1, 32, 10, 10, 32, 3, 3, 32, 1, 1, 1, 1, 1, 1, 1, 1},
      {"depthwise_strided", 1, 48, 11, 11, 48, 3, 3, 48, 2, 2, 1, 1, 1, 1,
       1, 1},
      {"depthwise_5x5_dilated", 1, 16, 9, 9, 16, 5, 5, 16, 1, 1, 4, 4, 4, 4,
       2, 2},
      {"batch3", 3, 16, 7, 7, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
      {"batch3_depthwise", 3, 16, 7, 7, 16, 3, 3, 16, 2, 2, 0, 1, 1, 0, 1, 1},
      // 13 output rows (bands of unequal heights), the bottom padding only
      // partly reached by the stride.
      {"tall_strided_pads", 1, 16, 26, 9, 16, 3, 3, 1, 2, 1, 1, 1, 2, 1, 1,
       1},
      // Padding as deep as the dilated window: the first and last bands'
      // windows reach 4 rows into it.
      {"deep_pads_dilated", 1, 8, 15, 7, 8, 3, 3, 1, 1, 1, 4, 1, 4, 1, 2, 1},
  };
}

// Seeded values in [-1, 1].
Tensor Random(const Shape& shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  int64_t count = 1;
  for (int i = 0; i < shape.rank(); ++i) count *= shape.dim(i);
  std::vector<float> v(count);
  for (float& x : v) x = dist(gen);
  return Tensor::FromVector<float>(v, shape);
}

int64_t OutDim(int in, int k, int s, int p0, int p1, int d) {
  return (in + p0 + p1 - d * (k - 1) - 1) / s + 1;
}

Shape OutShape(const Case& p) {
  return Shape({p.n, p.o, OutDim(p.h, p.kh, p.sh, p.pt, p.pb, p.dh),
                OutDim(p.w, p.kw, p.sw, p.pl, p.pr, p.dw)});
}

Attrs ConvAttrs(const Case& p) {
  return {{"strides", IntListAttr({p.sh, p.sw})},
          {"pads", IntListAttr({p.pt, p.pl, p.pb, p.pr})},
          {"dilations", IntListAttr({p.dh, p.dw})},
          {"group", IntAttr(p.group)}};
}

// float32 sums of up to a few hundred products of values in [-1, 1]: the
// two paths sum in different orders.
constexpr double kTolerance = 2e-4;

// Through the tests' one comparator (testing/compare.h): a NaN or an
// infinity fails (std::max over |g - w| / (1 + |w|) once dropped NaNs).
void ExpectNear(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_EQ(CompareValues(ToDoubles(got), ToDoubles(want), want.dtype(),
                          RelativeAndAbsolute(kTolerance)),
            "");
}

// The channel block oneDNN's direct convolutions use on this CPU (what
// PlanConvSlicing counts units in): 16 with AVX-512, else 8.
int BlockWidth() {
  return __builtin_cpu_supports("avx512f") ? 16 : 8;
}

// Whether the kernel, its least slice work lowered to 1, cuts an image of
// `p` into bands of rows at `threads` threads: yes where the image has at
// most half as many channel blocks (or runs of groups) as the pool has
// threads per image and more than one output row (two bands then always
// beat none), no with one thread or a batch that fills the pool; nullopt
// (not checked) in between, where PlanConvSlicing's costs decide.
std::optional<bool> ExpectRowBands(const Case& p, int threads) {
  if (threads == 1 || p.n >= threads) return false;
  const int64_t cg = p.c / p.group;
  int64_t units = (p.o + BlockWidth() - 1) / BlockWidth();
  if (p.group > 1) {  // runs of groups whose input channels fill blocks
    int64_t step = 1;
    while (step < p.group && (step * cg) % BlockWidth() != 0) ++step;
    units = (step * cg) % BlockWidth() == 0 ? (p.group + step - 1) / step : 1;
  }
  if (OutShape(p).dim(2) >= 2 && p.n * 2 * units <= threads) return true;
  return std::nullopt;
}

// Runs `op` on the loops (reference) and on oneDNN, compares, and checks
// that oneDNN ran exactly when `expect_onednn`, cut into bands of rows
// exactly when `expect_bands` (when given).
void Compare(const std::string& op, const std::vector<Tensor>& inputs,
             const Attrs& attrs, int threads, bool expect_onednn = true,
             std::optional<bool> expect_bands = std::nullopt) {
  RunOptions opts;
  opts.intra_op_threads = threads;
  SetTestCpuConvolutions(CpuConvPath::kLoops);
  auto want = RunOp(op, inputs, attrs, opts);
  SetTestCpuConvolutions(CpuConvPath::kOneDnn);
  ASSERT_TRUE(want.ok()) << want.status();
  const int64_t before = cpu::OneDnnConvRuns();
  const int64_t banded_before = cpu::OneDnnConvRowSlicedRuns();
  auto got = RunOp(op, inputs, attrs, opts);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(cpu::OneDnnConvRuns() - before, expect_onednn ? 1 : 0);
  if (expect_bands.has_value()) {
    EXPECT_EQ(cpu::OneDnnConvRowSlicedRuns() - banded_before,
              *expect_bands ? 1 : 0);
  }
  ExpectNear((*got)[0], (*want)[0]);
}

// (case, threads, least slice work: 0 for the default).
using Param = std::tuple<Case, int, int64_t>;

class OneDnnConvTest : public ::testing::TestWithParam<Param> {
 protected:
  // Whether this case is to be cut into bands (nullopt: not checked, at
  // the default least work).
  std::optional<bool> Bands() const {
    const auto& [p, threads, min_macs] = GetParam();
    if (min_macs == 0) return std::nullopt;
    return ExpectRowBands(p, threads);
  }

  void SetUp() override {
    Tensor x = Random(Shape({1, 8, 4, 4}), 1);
    Tensor f = Random(Shape({8, 8, 1, 1}), 2);
    SetTestCpuConvolutions(CpuConvPath::kOneDnn);
    const int64_t before = cpu::OneDnnConvRuns();
    auto out = RunOp("Conv2D", {x, f}, ConvAttrs(Cases()[0]));
    if (!out.ok() || cpu::OneDnnConvRuns() == before) {
      GTEST_SKIP() << "this build has no oneDNN convolution";
    }
    cpu::SetMinConvSliceMacs(std::get<2>(GetParam()));
  }
  void TearDown() override {
    SetTestCpuConvolutions(CpuConvPath::kAuto);
    cpu::SetMinConvSliceMacs(0);
  }
};

TEST_P(OneDnnConvTest, Conv2DMatchesTheLoops) {
  const auto& [p, threads, min_macs] = GetParam();
  Tensor x = Random(Shape({p.n, p.c, p.h, p.w}), 11);
  Tensor f = Random(Shape({p.o, p.c / p.group, p.kh, p.kw}), 12);
  Compare("Conv2D", {x, f}, ConvAttrs(p), threads, true, Bands());
}

TEST_P(OneDnnConvTest, FusedConv2DWithBiasAndReluMatchesTheLoops) {
  const auto& [p, threads, min_macs] = GetParam();
  Tensor x = Random(Shape({p.n, p.c, p.h, p.w}), 21);
  Tensor f = Random(Shape({p.o, p.c / p.group, p.kh, p.kw}), 22);
  Tensor b = Random(Shape({p.o}), 23);
  for (const char* act : {"none", "relu"}) {
    SCOPED_TRACE(act);
    Attrs attrs = ConvAttrs(p);
    attrs["activation"] = StringAttr(act);
    Compare("FusedConv2D", {x, f, b}, attrs, threads, true, Bands());
  }
}

TEST_P(OneDnnConvTest, FusedConv2DWithResidualMatchesTheLoops) {
  const auto& [p, threads, min_macs] = GetParam();
  Tensor x = Random(Shape({p.n, p.c, p.h, p.w}), 31);
  Tensor f = Random(Shape({p.o, p.c / p.group, p.kh, p.kw}), 32);
  Tensor b = Random(Shape({p.o}), 33);
  Tensor side = Random(OutShape(p), 34);
  for (const char* act : {"none", "relu"}) {
    SCOPED_TRACE(act);
    Attrs attrs = ConvAttrs(p);
    attrs["activation"] = StringAttr(act);
    Compare("FusedConv2D", {x, f, b, side}, attrs, threads, true, Bands());
  }
}

// ReLU6 is not a FusedConv2D activation (yet): OneDnnConv's clip post-op
// straight, against the loops' convolution + bias + residual clamped.
TEST_P(OneDnnConvTest, Relu6PostOpMatchesTheLoopsClamped) {
  const auto& [p, threads, min_macs] = GetParam();
  Tensor x = Random(Shape({p.n, p.c, p.h, p.w}), 41);
  // Scaled up so that some outputs pass 6.
  Tensor f = Random(Shape({p.o, p.c / p.group, p.kh, p.kw}), 42);
  for (float& v : absl::MakeSpan(f.data<float>(), f.NumElements())) v *= 8;
  Tensor b = Random(Shape({p.o}), 43);
  Tensor side = Random(OutShape(p), 44);
  Attrs attrs = ConvAttrs(p);
  attrs["activation"] = StringAttr("none");
  RunOptions opts;
  opts.intra_op_threads = threads;
  SetTestCpuConvolutions(CpuConvPath::kLoops);
  auto want = RunOp("FusedConv2D", {x, f, b, side}, attrs, opts);
  SetTestCpuConvolutions(CpuConvPath::kOneDnn);
  ASSERT_TRUE(want.ok()) << want.status();
  std::vector<double> clamped = ToDoubles((*want)[0]);
  for (double& v : clamped) v = std::clamp(v, 0.0, 6.0);

  auto graph = testing::OneNodeGraph("Conv2D", {x, f}, ConvAttrs(p));
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node* node = (*graph)->FindNode("op");
  CpuDevice device(0, 0, threads);
  device.set_provider(&TestCpuProvider());
  const std::vector<Tensor> inputs = {x, f};
  std::vector<Tensor> outputs(1);
  OpKernelContext ctx(node, &device, inputs, absl::MakeSpan(outputs));
  auto y = ctx.allocate_output(0, OutShape(p));
  ASSERT_TRUE(y.ok()) << y.status();
  Conv2DParams params;
  params.strides = {p.sh, p.sw};
  params.pads = {p.pt, p.pl, p.pb, p.pr};
  params.dilations = {p.dh, p.dw};
  params.group = p.group;
  std::unique_ptr<cpu::OneDnnConv> conv =
      cpu::OneDnnConv::Create(params, cpu::ConvActivation::kRelu6);
  ASSERT_NE(conv, nullptr);
  auto ran = conv->Compute(&ctx, x, f, b.data<float>(), &side, *y);
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_TRUE(*ran);
  ExpectNear(**y, Tensor::FromVector<float>(
                      std::vector<float>(clamped.begin(), clamped.end()),
                      OutShape(p)));
  const std::vector<double> got = ToDoubles(**y);
  EXPECT_GT(std::count(got.begin(), got.end(), 6.0), 0) << "nothing clipped";
}

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  return std::get<0>(info.param).name + "_threads" +
         std::to_string(std::get<1>(info.param)) +
         (std::get<2>(info.param) > 0 ? "_bands" : "");
}

INSTANTIATE_TEST_SUITE_P(
    Convolutions, OneDnnConvTest,
    ::testing::Combine(::testing::ValuesIn(Cases()), ::testing::Values(1, 2),
                       ::testing::Values(int64_t{0})),
    ParamName);

// The intra-op pool may have more threads than the machine has cores: 7 and
// 16 threads cut these small images into bands of a row or two.
INSTANTIATE_TEST_SUITE_P(
    RowBands, OneDnnConvTest,
    ::testing::Combine(::testing::ValuesIn(Cases()),
                       ::testing::Values(1, 2, 3, 7, 16),
                       ::testing::Values(int64_t{1})),
    ParamName);

// oneDNN offers only its im2col + GEMM for groups of 5 channels in and 7
// out (no vector block fits) and for a depthwise multiplier of 2: the
// kernel declines it and runs the loops, with the same result.
TEST(OneDnnConvFallbackTest, DeclinedProblemRunsOnTheLoops) {
  for (const Case& p :
       {Case{"groups_of_5", 1, 15, 9, 9, 21, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
        Case{"multiplier_2", 1, 8, 9, 9, 16, 3, 3, 8, 1, 1, 1, 1, 1, 1, 1,
             1}}) {
    SCOPED_TRACE(p.name);
    Tensor x = Random(Shape({p.n, p.c, p.h, p.w}), 51);
    Tensor f = Random(Shape({p.o, p.c / p.group, p.kh, p.kw}), 52);
    Compare("Conv2D", {x, f}, ConvAttrs(p), 2, /*expect_onednn=*/false);
  }
  SetTestCpuConvolutions(CpuConvPath::kAuto);
}

// The default mode leaves 1x1 windows, large depthwise planes and images
// with fewer output-channel blocks than threads to the loops, and runs the
// other 3x3 windows on oneDNN.
TEST(OneDnnConvFallbackTest, AutoModeRunsOnlyWhatOneDnnIsFasterFor) {
  SetTestCpuConvolutions(CpuConvPath::kAuto);
  if (cpu::OneDnnConv::Create(Conv2DParams(), cpu::ConvActivation::kNone) ==
      nullptr) {
    GTEST_SKIP() << "this build has no oneDNN convolution";
  }
  const Case pointwise = Cases()[1];
  const Case depthwise_large{"dw56", 1, 8, 56, 56, 8, 3, 3, 8,
                             1, 1, 1, 1, 1, 1, 1, 1};
  const Case three = Cases()[0];
  // One output row of one channel block (16 channels with AVX-512, 8
  // with AVX2): one slice at most.
  const Case one_row{"one_row", 1, 8, 3, 9, BlockWidth(), 3, 3, 1,
                     1, 1, 0, 1, 0, 1, 1, 1};
  // plain3x3 has 32 output channels: two blocks of 16 (or four of 8) and
  // 9 rows.
  struct Expect {
    Case p;
    int threads;
    int runs;
  };
  for (const auto& [p, threads, want] :
       {Expect{pointwise, 1, 0}, Expect{depthwise_large, 1, 0},
        Expect{three, 1, 1}, Expect{three, 2, 1}, Expect{three, 8, 0},
        Expect{one_row, 1, 1}, Expect{one_row, 2, 0}}) {
    SCOPED_TRACE(::testing::Message() << p.name << " threads " << threads);
    Tensor x = Random(Shape({p.n, p.c, p.h, p.w}), 61);
    Tensor f = Random(Shape({p.o, p.c / p.group, p.kh, p.kw}), 62);
    RunOptions opts;
    opts.intra_op_threads = threads;
    const int64_t before = cpu::OneDnnConvRuns();
    auto out = RunOp("Conv2D", {x, f}, ConvAttrs(p), opts);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(cpu::OneDnnConvRuns() - before, want);
  }
}

// One FusedConv2D kernel (so one plan cache and one reordered filter)
// computed from four threads at once, each on its own 2-thread device,
// gives the loops' result every time.
// Batch 1 (each image cut into channel slices, or into bands of rows when
// `min_macs` is set) and batch 3 (cut by image).
void RunFromFourThreads(const Case& p, int64_t min_macs = 0) {
  SCOPED_TRACE(p.name);
  SetTestCpuConvolutions(CpuConvPath::kOneDnn);
  cpu::SetMinConvSliceMacs(min_macs);
  Tensor x = Random(Shape({p.n, p.c, p.h, p.w}), 71);
  Tensor f = Random(Shape({p.o, p.c / p.group, p.kh, p.kw}), 72);
  Tensor b = Random(Shape({p.o}), 73);
  Tensor side = Random(OutShape(p), 74);
  Attrs attrs = ConvAttrs(p);
  attrs["activation"] = StringAttr("relu");
  const std::vector<Tensor> inputs = {x, f, b, side};
  SetTestCpuConvolutions(CpuConvPath::kLoops);
  auto want = RunOp("FusedConv2D", inputs, attrs);
  SetTestCpuConvolutions(CpuConvPath::kOneDnn);
  ASSERT_TRUE(want.ok()) << want.status();
  auto graph = testing::OneNodeGraph("FusedConv2D", inputs, attrs);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node* node = (*graph)->FindNode("op");
  auto kernel = KernelRegistry::Global()->Create(*node, DeviceType::kCpu);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  const int64_t before = cpu::OneDnnConvRuns();
  const int64_t banded_before = cpu::OneDnnConvRowSlicedRuns();
  constexpr int kThreads = 4, kSteps = 5;
  std::vector<std::vector<Tensor>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      CpuDevice device(0, 0, 2);
      device.set_provider(&TestCpuProvider());
      for (int step = 0; step < kSteps; ++step) {
        std::vector<Tensor> outputs(1);
        OpKernelContext ctx(node, &device, inputs, absl::MakeSpan(outputs));
        if (!(*kernel)->Compute(&ctx).ok()) return;
        // A copy that outlives the device's allocator.
        auto copy = Tensor::Create(DT_FLOAT, outputs[0].shape());
        if (!copy.ok()) return;
        std::memcpy(copy->raw_data(), outputs[0].raw_data(), copy->bytes());
        results[t].push_back(*std::move(copy));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(cpu::OneDnnConvRuns() - before, kThreads * kSteps);
  if (min_macs > 0 && ExpectRowBands(p, 2).has_value()) {
    EXPECT_EQ(cpu::OneDnnConvRowSlicedRuns() - banded_before,
              *ExpectRowBands(p, 2) ? kThreads * kSteps : 0);
  }
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(results[t].size(), static_cast<size_t>(kSteps)) << t;
    for (const Tensor& r : results[t]) ExpectNear(r, (*want)[0]);
  }
  SetTestCpuConvolutions(CpuConvPath::kAuto);
  cpu::SetMinConvSliceMacs(0);
}

TEST(OneDnnConvConcurrencyTest, OneKernelFromFourThreadsMatchesTheLoops) {
  if (cpu::OneDnnConv::Create(Conv2DParams(), cpu::ConvActivation::kNone) ==
      nullptr) {
    GTEST_SKIP() << "this build has no oneDNN convolution";
  }
  RunFromFourThreads(Cases()[0]);   // plain3x3, batch 1
  RunFromFourThreads(Cases()[12]);  // batch3
  // One channel block cut into two bands of rows: odd_channels' 13 with
  // AVX-512's 16-wide blocks, deep_pads_dilated's 8 with AVX2's.
  // Held here: `banded` points into it after the loop.
  const std::vector<Case> cases = Cases();
  const Case* banded = nullptr;
  for (const Case& p : cases) {
    if (banded == nullptr && p.n == 1 && ExpectRowBands(p, 2) == true) {
      banded = &p;
    }
  }
  ASSERT_NE(banded, nullptr);
  RunFromFourThreads(*banded, 1);
}

// t (rank 4) permuted by the Transpose kernel.
Tensor Permuted(const Tensor& t, std::vector<int64_t> perm) {
  auto out = RunOp("Transpose", {t}, {{"perm", IntListAttr(perm)}});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0] : Tensor();
}

// The channels-last path (onednn_conv_nhwc.h): one kernel run from four
// threads at once, each call its own OpenMP team, matches the NCHW loops.
TEST(OneDnnConvNhwcConcurrencyTest, OneKernelFromFourThreadsMatchesTheLoops) {
  if (!cpu::OneDnnConvolutionsBuiltIn()) {
    GTEST_SKIP() << "this build has no oneDNN convolution";
  }
  for (const Case& p : {Cases()[0], Cases()[12]}) {  // plain3x3, batch3
    SCOPED_TRACE(p.name);
    Tensor x = Random(Shape({p.n, p.c, p.h, p.w}), 81);
    Tensor f = Random(Shape({p.o, p.c / p.group, p.kh, p.kw}), 82);
    Tensor b = Random(Shape({p.o}), 83);
    Tensor side = Random(OutShape(p), 84);
    Attrs attrs = ConvAttrs(p);
    attrs["activation"] = StringAttr("relu");
    SetTestCpuConvolutions(CpuConvPath::kLoops);
    auto want = RunOp("FusedConv2D", {x, f, b, side}, attrs);
    SetTestCpuConvolutions(CpuConvPath::kAuto);
    ASSERT_TRUE(want.ok()) << want.status();
    const Tensor want_nhwc = Permuted((*want)[0], {0, 2, 3, 1});
    const std::vector<Tensor> inputs = {Permuted(x, {0, 2, 3, 1}),
                                        Permuted(f, {0, 2, 3, 1}), b,
                                        Permuted(side, {0, 2, 3, 1})};
    attrs["data_format"] = StringAttr("NHWC");
    auto graph = testing::OneNodeGraph("FusedConv2D", inputs, attrs);
    ASSERT_TRUE(graph.ok()) << graph.status();
    const Node* node = (*graph)->FindNode("op");
    auto kernel = KernelRegistry::Global()->Create(*node, DeviceType::kCpu);
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    const int64_t before = cpu::OneDnnConvNhwcRuns();
    constexpr int kThreads = 4, kSteps = 5;
    std::vector<std::vector<Tensor>> results(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        CpuDevice device(0, 0, 2);
        device.set_provider(&TestCpuProvider());
        for (int step = 0; step < kSteps; ++step) {
          std::vector<Tensor> outputs(1);
          OpKernelContext ctx(node, &device, inputs, absl::MakeSpan(outputs));
          if (!(*kernel)->Compute(&ctx).ok()) return;
          auto copy = Tensor::Create(DT_FLOAT, outputs[0].shape());
          if (!copy.ok()) return;
          std::memcpy(copy->raw_data(), outputs[0].raw_data(), copy->bytes());
          results[t].push_back(*std::move(copy));
        }
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(cpu::OneDnnConvNhwcRuns() - before, kThreads * kSteps);
    for (int t = 0; t < kThreads; ++t) {
      ASSERT_EQ(results[t].size(), static_cast<size_t>(kSteps)) << t;
      for (const Tensor& r : results[t]) ExpectNear(r, want_nhwc);
    }
  }
}

// OmpThreads: a team holds its cores (at most all of them); a second team
// that does not fit waits until the first ends; one thread is no team.
TEST(OmpThreadsTest, TeamsTakeTurnsAtTheCores) {
  const int cores = cpu::OmpCoresFree();
  if (!cpu::OneDnnConvolutionsBuiltIn() || cores < 2) {
    GTEST_SKIP() << "no oneDNN in this build, or one core";
  }
  {
    cpu::OmpThreads serial(1);
    EXPECT_EQ(cpu::OmpCoresFree(), cores);
  }
  std::optional<cpu::OmpThreads> first;
  first.emplace(4 * cores);  // more than the machine: all of it
  EXPECT_EQ(cpu::OmpCoresFree(), 0);
  std::atomic<bool> entered{false};
  std::thread second([&] {
    cpu::OmpThreads team(2);
    entered = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(entered.load());
  first.reset();
  second.join();
  EXPECT_TRUE(entered.load());
  EXPECT_EQ(cpu::OmpCoresFree(), cores);
}

// PlanConvSlicing: channel blocks first; bands of rows where an image has
// fewer blocks than threads; no slice under the least work; no cut for one
// thread or a batch as large as the pool.
TEST(PlanConvSlicingTest, CutsRowsOnlyWhereChannelsDoNotFillThePool) {
  constexpr int64_t kMin = cpu::kMinConvSliceMacs;
  // ResNet-50's 3x3 of 64 channels on 56x56 at batch 1: 4 blocks of 16.
  const int64_t macs64 = int64_t{64} * 64 * 9 * 56 * 56;
  cpu::ConvSlicing s = cpu::PlanConvSlicing(4, 56, macs64, 1, 16, kMin);
  EXPECT_EQ(s.channel_parts, 4);
  EXPECT_EQ(s.row_parts, 4);
  // At 2 threads the blocks are enough: no bands.
  s = cpu::PlanConvSlicing(4, 56, macs64, 1, 2, kMin);
  EXPECT_EQ(s.channel_parts, 2);
  EXPECT_EQ(s.row_parts, 1);
  // 512 channels on 7x7: 32 blocks, 16 slices of channels.
  s = cpu::PlanConvSlicing(32, 7, int64_t{512} * 512 * 9 * 49, 1, 16, kMin);
  EXPECT_EQ(s.channel_parts, 16);
  EXPECT_EQ(s.row_parts, 1);
  // 3 blocks at 16 threads: 3 x 5 = 15 slices of about 1/15 beat 3 x 6 =
  // 18 in two waves; all 16 on rows (1 x 16) ties 15 at ceil(56/16) = 4
  // rows, 3 x 5 has ceil(56/5) = 12 rows of one block...
  s = cpu::PlanConvSlicing(3, 56, int64_t{48} * 48 * 9 * 56 * 56, 1, 16,
                           kMin);
  EXPECT_LE(s.slices(), 16);
  EXPECT_GE(s.slices(), 14);
  // Batch 2 at 16 threads: 8 slices an image.
  s = cpu::PlanConvSlicing(4, 56, macs64, 2, 16, kMin);
  EXPECT_EQ(s.slices(), 8);
  // One thread, or a batch that fills the pool: no cut.
  EXPECT_EQ(cpu::PlanConvSlicing(4, 56, macs64, 1, 1, kMin).slices(), 1);
  EXPECT_EQ(cpu::PlanConvSlicing(4, 56, macs64, 16, 16, kMin).slices(), 1);
  // Too little work for 16 slices of the least size: as many as there is
  // work for.
  s = cpu::PlanConvSlicing(1, 56, 5 * kMin, 1, 16, kMin);
  EXPECT_EQ(s.slices(), 5);
  EXPECT_EQ(cpu::PlanConvSlicing(1, 56, kMin / 2, 1, 16, kMin).slices(), 1);
}

// cpu_convolutions LOOPS (the device's provider setting): no convolution,
// NCHW or channels last, runs on oneDNN.
TEST(OneDnnConvFallbackTest, SwitchedOffRunsNothingOnOneDnn) {
  SetTestCpuConvolutions(CpuConvPath::kLoops);
  const Case p = Cases()[0];
  Tensor x = Random(Shape({p.n, p.c, p.h, p.w}), 71);
  Tensor f = Random(Shape({p.o, p.c / p.group, p.kh, p.kw}), 72);
  RunOptions opts;
  opts.intra_op_threads = 2;
  const int64_t before = cpu::OneDnnConvRuns();
  auto out = RunOp("Conv2D", {x, f}, ConvAttrs(p), opts);
  SetTestCpuConvolutions(CpuConvPath::kAuto);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(cpu::OneDnnConvRuns(), before);
  EXPECT_FALSE(CpuProvider({.convolutions = CpuConvPath::kLoops})
                   .RunsNhwcConvolutionsOnOneDnn());
}

}  // namespace
}  // namespace sluice::onednn_conv_test
