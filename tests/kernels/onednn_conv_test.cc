// kernels/cpu/onednn_conv.h: Conv2D and FusedConv2D on oneDNN's
// convolution primitive against conv.cc's own loops (the reference), seeded,
// over grouped, depthwise, dilated, strided, padded (asymmetric too), 1x1,
// batch 1 and 3, at 1 and 2 intra-op threads (2 cuts each image's output
// channels into one primitive per thread), with bias, residual (`sum`),
// Relu and ReLU6 (clip) post-ops; each case checks that oneDNN ran
// (OneDnnConvRuns; the cases run in ConvMode::kAlways, so that 1x1
// windows go to oneDNN too). A problem oneDNN only offers its im2col + GEMM for is
// declined and still runs, on the loops. Builds without oneDNN skip.
#include "kernels/cpu/onednn_conv.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
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

namespace sluice {
namespace {

using ::sluice::testing::Attrs;
using ::sluice::testing::IntAttr;
using ::sluice::testing::IntListAttr;
using ::sluice::testing::RunOp;
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

void ExpectNear(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  const std::vector<double> g = ToDoubles(got), w = ToDoubles(want);
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    worst = std::max(worst, std::abs(g[i] - w[i]) / (1.0 + std::abs(w[i])));
  }
  EXPECT_LE(worst, kTolerance);
}

// Runs `op` on the loops (reference) and on oneDNN, compares, and checks
// that oneDNN ran exactly when `expect_onednn`.
void Compare(const std::string& op, const std::vector<Tensor>& inputs,
             const Attrs& attrs, int threads, bool expect_onednn = true) {
  RunOptions opts;
  opts.intra_op_threads = threads;
  cpu::SetConvMode(cpu::ConvMode::kReference);
  auto want = RunOp(op, inputs, attrs, opts);
  cpu::SetConvMode(cpu::ConvMode::kAlways);
  ASSERT_TRUE(want.ok()) << want.status();
  const int64_t before = cpu::OneDnnConvRuns();
  auto got = RunOp(op, inputs, attrs, opts);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(cpu::OneDnnConvRuns() - before, expect_onednn ? 1 : 0);
  ExpectNear((*got)[0], (*want)[0]);
}

class OneDnnConvTest : public ::testing::TestWithParam<std::tuple<Case, int>> {
 protected:
  void SetUp() override {
    Tensor x = Random(Shape({1, 8, 4, 4}), 1);
    Tensor f = Random(Shape({8, 8, 1, 1}), 2);
    cpu::SetConvMode(cpu::ConvMode::kAlways);
    const int64_t before = cpu::OneDnnConvRuns();
    auto out = RunOp("Conv2D", {x, f}, ConvAttrs(Cases()[0]));
    if (!out.ok() || cpu::OneDnnConvRuns() == before) {
      GTEST_SKIP() << "this build has no oneDNN convolution";
    }
  }
  void TearDown() override { cpu::SetConvMode(cpu::ConvMode::kAuto); }
};

TEST_P(OneDnnConvTest, Conv2DMatchesTheLoops) {
  const auto& [p, threads] = GetParam();
  Tensor x = Random(Shape({p.n, p.c, p.h, p.w}), 11);
  Tensor f = Random(Shape({p.o, p.c / p.group, p.kh, p.kw}), 12);
  Compare("Conv2D", {x, f}, ConvAttrs(p), threads);
}

TEST_P(OneDnnConvTest, FusedConv2DWithBiasAndReluMatchesTheLoops) {
  const auto& [p, threads] = GetParam();
  Tensor x = Random(Shape({p.n, p.c, p.h, p.w}), 21);
  Tensor f = Random(Shape({p.o, p.c / p.group, p.kh, p.kw}), 22);
  Tensor b = Random(Shape({p.o}), 23);
  for (const char* act : {"none", "relu"}) {
    SCOPED_TRACE(act);
    Attrs attrs = ConvAttrs(p);
    attrs["activation"] = StringAttr(act);
    Compare("FusedConv2D", {x, f, b}, attrs, threads);
  }
}

TEST_P(OneDnnConvTest, FusedConv2DWithResidualMatchesTheLoops) {
  const auto& [p, threads] = GetParam();
  Tensor x = Random(Shape({p.n, p.c, p.h, p.w}), 31);
  Tensor f = Random(Shape({p.o, p.c / p.group, p.kh, p.kw}), 32);
  Tensor b = Random(Shape({p.o}), 33);
  Tensor side = Random(OutShape(p), 34);
  for (const char* act : {"none", "relu"}) {
    SCOPED_TRACE(act);
    Attrs attrs = ConvAttrs(p);
    attrs["activation"] = StringAttr(act);
    Compare("FusedConv2D", {x, f, b, side}, attrs, threads);
  }
}

// ReLU6 is not a FusedConv2D activation (yet): OneDnnConv's clip post-op
// straight, against the loops' convolution + bias + residual clamped.
TEST_P(OneDnnConvTest, Relu6PostOpMatchesTheLoopsClamped) {
  const auto& [p, threads] = GetParam();
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
  cpu::SetConvMode(cpu::ConvMode::kReference);
  auto want = RunOp("FusedConv2D", {x, f, b, side}, attrs, opts);
  cpu::SetConvMode(cpu::ConvMode::kAlways);
  ASSERT_TRUE(want.ok()) << want.status();
  std::vector<double> clamped = ToDoubles((*want)[0]);
  for (double& v : clamped) v = std::clamp(v, 0.0, 6.0);

  auto graph = testing::OneNodeGraph("Conv2D", {x, f}, ConvAttrs(p));
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node* node = (*graph)->FindNode("op");
  CpuDevice device(0, 0, threads);
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

INSTANTIATE_TEST_SUITE_P(
    Convolutions, OneDnnConvTest,
    ::testing::Combine(::testing::ValuesIn(Cases()), ::testing::Values(1, 2)),
    [](const ::testing::TestParamInfo<std::tuple<Case, int>>& info) {
      return std::get<0>(info.param).name + "_threads" +
             std::to_string(std::get<1>(info.param));
    });

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
  cpu::SetConvMode(cpu::ConvMode::kAuto);
}

// The default mode leaves 1x1 windows, large depthwise planes and images
// with fewer blocks of output channels than threads to the loops, and runs
// the other 3x3 windows on oneDNN.
TEST(OneDnnConvFallbackTest, AutoModeRunsOnlyWhatOneDnnIsFasterFor) {
  cpu::SetConvMode(cpu::ConvMode::kAuto);
  if (cpu::OneDnnConv::Create(Conv2DParams(), cpu::ConvActivation::kNone) ==
      nullptr) {
    GTEST_SKIP() << "this build has no oneDNN convolution";
  }
  const Case pointwise = Cases()[1];
  const Case depthwise_large{"dw56", 1, 8, 56, 56, 8, 3, 3, 8,
                             1, 1, 1, 1, 1, 1, 1, 1};
  const Case three = Cases()[0];
  // plain3x3 has 32 output channels: two blocks of 16 (or four of 8).
  struct Expect {
    Case p;
    int threads;
    int runs;
  };
  for (const auto& [p, threads, want] :
       {Expect{pointwise, 1, 0}, Expect{depthwise_large, 1, 0},
        Expect{three, 1, 1}, Expect{three, 2, 1}, Expect{three, 8, 0}}) {
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
// Batch 1 (each image cut into channel slices) and batch 3 (cut by image).
void RunFromFourThreads(const Case& p) {
  SCOPED_TRACE(p.name);
  cpu::SetConvMode(cpu::ConvMode::kAlways);
  Tensor x = Random(Shape({p.n, p.c, p.h, p.w}), 71);
  Tensor f = Random(Shape({p.o, p.c / p.group, p.kh, p.kw}), 72);
  Tensor b = Random(Shape({p.o}), 73);
  Tensor side = Random(OutShape(p), 74);
  Attrs attrs = ConvAttrs(p);
  attrs["activation"] = StringAttr("relu");
  const std::vector<Tensor> inputs = {x, f, b, side};
  cpu::SetConvMode(cpu::ConvMode::kReference);
  auto want = RunOp("FusedConv2D", inputs, attrs);
  cpu::SetConvMode(cpu::ConvMode::kAlways);
  ASSERT_TRUE(want.ok()) << want.status();
  auto graph = testing::OneNodeGraph("FusedConv2D", inputs, attrs);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Node* node = (*graph)->FindNode("op");
  auto kernel = KernelRegistry::Global()->Create(*node, DeviceType::kCpu);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  const int64_t before = cpu::OneDnnConvRuns();
  constexpr int kThreads = 4, kSteps = 5;
  std::vector<std::vector<Tensor>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      CpuDevice device(0, 0, 2);
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
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(results[t].size(), static_cast<size_t>(kSteps)) << t;
    for (const Tensor& r : results[t]) ExpectNear(r, (*want)[0]);
  }
  cpu::SetConvMode(cpu::ConvMode::kAuto);
}

TEST(OneDnnConvConcurrencyTest, OneKernelFromFourThreadsMatchesTheLoops) {
  if (cpu::OneDnnConv::Create(Conv2DParams(), cpu::ConvActivation::kNone) ==
      nullptr) {
    GTEST_SKIP() << "this build has no oneDNN convolution";
  }
  RunFromFourThreads(Cases()[0]);   // plain3x3, batch 1
  RunFromFourThreads(Cases()[12]);  // batch3
}

TEST(OneDnnConvFallbackTest, SwitchedOffCreatesNoOneDnnPath) {
  cpu::SetConvMode(cpu::ConvMode::kReference);
  EXPECT_EQ(cpu::OneDnnConv::Create(Conv2DParams(), cpu::ConvActivation::kNone),
            nullptr);
  cpu::SetConvMode(cpu::ConvMode::kAuto);
}

}  // namespace
}  // namespace sluice
