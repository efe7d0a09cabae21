// RuntimeConfig.conv_layout in a session: a small CNN (a stem convolution
// with bias and Relu, max pooling, a residual block, a 1x1 convolution, a
// global average pool and a linear head) run with conv_layout NHWC gives
// what conv_layout NCHW gives, on the CPU (the layout pass runs on any
// device when asked) and on a GPU (skipped without one) in float32,
// float16 and bfloat16 at batch 1 and 3, over steps that replay as a CUDA
// graph; AUTO picks NHWC for a GPU session with cuDNN and a 16-bit
// precision and NCHW otherwise; an unknown conv_layout value is a config error.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/tensor_proto.h"
#include "device/cudnn_info.h"
#include "executor/runtime_config.h"
#include "executor/session.h"
#include "graph/attr_map.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "kernels/cpu/omp_threads.h"
#include "kernels/cpu/onednn_conv.h"
#include "kernels/cpu/onednn_conv_nhwc.h"
#include "tests/executor/gpu_test_util.h"

namespace sluice::conv_layout_test {
namespace {

// Deterministic weights in [-0.5, 0.5).
Tensor Weights(const std::vector<int64_t>& dims, int seed) {
  Shape s(dims);
  std::vector<float> v(s.num_elements());
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<float>((i * 37 + seed * 101) % 97) / 97.0f - 0.5f;
  }
  return Tensor::FromVector(v, s);
}

class DefMaker {
 public:
  DefMaker& Node(const std::string& name, const std::string& op,
                 const std::vector<std::string>& inputs,
                 const std::map<std::string, AttrValue>& attrs = {}) {
    NodeDef* n = def_.add_node();
    n->set_name(name);
    n->set_op(op);
    for (const std::string& in : inputs) n->add_input(in);
    for (const auto& [k, v] : attrs) (*n->mutable_attr())[k] = v;
    return *this;
  }
  DefMaker& Const(const std::string& name, const Tensor& t) {
    return Node(name, "Const", {}, {{"value", MakeTensorAttr(TensorToProto(t))}});
  }
  GraphDef def() const { return def_; }

 private:
  GraphDef def_;
};

AttrValue Ints(const std::vector<int64_t>& v) { return MakeIntListAttr(v); }

// x [N, 3, 16, 16] -> y [N, 10].
GraphDef CnnDef() {
  DefMaker m;
  m.Node("x", "Input", {},
         {{"dtype", MakeTypeAttr(DT_FLOAT)}, {"shape", MakeShapeAttr(Shape({-1, 3, 16, 16}))}})
      .Const("w1", Weights({16, 3, 3, 3}, 1))
      .Const("b1", Weights({1, 16, 1, 1}, 2))
      .Const("w2", Weights({16, 16, 3, 3}, 3))
      .Const("b2", Weights({1, 16, 1, 1}, 4))
      .Const("w3", Weights({16, 16, 3, 3}, 5))
      .Const("b3", Weights({16, 1, 1}, 6))
      .Const("w4", Weights({32, 16, 1, 1}, 7))
      .Const("fc", Weights({32, 10}, 8))
      .Node("c1", "Conv2D", {"x", "w1"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Node("c1b", "Add", {"c1", "b1"})
      .Node("r1", "Relu", {"c1b"})
      .Node("p1", "MaxPool", {"r1"},
            {{"kernel_shape", Ints({3, 3})}, {"strides", Ints({2, 2})},
             {"pads", Ints({1, 1, 1, 1})}})
      .Node("c2", "Conv2D", {"p1", "w2"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Node("c2b", "Add", {"c2", "b2"})
      .Node("r2", "Relu", {"c2b"})
      .Node("c3", "Conv2D", {"r2", "w3"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Node("c3b", "Add", {"c3", "b3"})
      .Node("sum", "Add", {"c3b", "p1"})
      .Node("r3", "Relu", {"sum"})
      .Node("c4", "Conv2D", {"r3", "w4"}, {{"strides", Ints({2, 2})}})
      .Node("r4", "Relu", {"c4"})
      .Node("gap", "GlobalAvgPool", {"r4"})
      .Node("flat", "Reshape", {"gap"}, {{"shape", Ints({-1, 32})}})
      .Node("y", "MatMul", {"flat", "fc"});
  return m.def();
}

absl::StatusOr<std::unique_ptr<Session>> MakeSession(const RuntimeConfig& config) {
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(CnnDef());
  if (!g.ok()) return g.status();
  return Session::Create(*std::move(g), config);
}

Tensor Input(int64_t batch, int seed) {
  Shape s({batch, 3, 16, 16});
  std::vector<float> v(s.num_elements());
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<float>((i * 13 + seed * 7) % 53) / 26.5f - 1.0f;
  }
  return Tensor::FromVector(v, s);
}

double RelL2(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < b.NumElements(); ++i) {
    const double d = double{a.data<float>()[i]} - b.data<float>()[i];
    num += d * d;
    den += double{b.data<float>()[i]} * b.data<float>()[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

int NhwcNodes(const Session& s) {
  int k = 0;
  for (const Node& n : s.graph().nodes()) {
    k += n.attrs().GetString("data_format").value_or("") == "NHWC";
  }
  return k;
}

TEST(ConvLayoutSessionTest, NhwcMatchesNchwOnTheCpu) {
  RuntimeConfig nchw;
  nchw.set_use_gpu(false);
  nchw.set_conv_layout(CONV_LAYOUT_NCHW);
  // Below the thread count whose regions all run on OpenMP teams.
  nchw.set_intra_op_threads(2);
  RuntimeConfig nhwc = nchw;
  nhwc.set_conv_layout(CONV_LAYOUT_NHWC);
  auto a = MakeSession(nchw);
  auto b = MakeSession(nhwc);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(NhwcNodes(**a), 0);
  // Four convolutions and the pooling.
  EXPECT_EQ(NhwcNodes(**b), 5);
  for (int64_t batch : {1, 3}) {
    Tensor x = Input(batch, static_cast<int>(batch));
    auto want = (*a)->Run({{"x", x}});
    auto got = (*b)->Run({{"x", x}});
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ((*got)[0].shape(), Shape({batch, 10}));
    EXPECT_LT(RelL2((*got)[0], (*want)[0]), 1e-6) << "batch " << batch;
  }
}

TEST(ConvLayoutSessionTest, AutoIsNchwWithoutAGpu) {
  RuntimeConfig config;
  config.set_use_gpu(false);
  config.set_precision(PRECISION_BFLOAT16);
  auto s = MakeSession(config);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(NhwcNodes(**s), 0);
}

// float32 on the CPU alone: AUTO is NHWC where oneDNN runs the
// convolutions channels last (and they ran there), and agrees with NCHW.
TEST(ConvLayoutSessionTest, AutoIsNhwcOnTheCpuWithOneDnnInFloat32) {
  RuntimeConfig nchw;
  nchw.set_use_gpu(false);
  nchw.set_conv_layout(CONV_LAYOUT_NCHW);
  // Below the thread count whose regions all run on OpenMP teams.
  nchw.set_intra_op_threads(2);
  RuntimeConfig config;
  config.set_use_gpu(false);
  auto a = MakeSession(nchw);
  auto s = MakeSession(config);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(s.ok()) << s.status();
  if (!cpu::OneDnnConvolutionsBuiltIn()) {
    EXPECT_EQ(NhwcNodes(**s), 0);
    GTEST_SKIP() << "this build has no oneDNN convolution: AUTO is NCHW";
  }
  EXPECT_EQ(NhwcNodes(**s), 5);
  const int64_t runs = cpu::OneDnnConvNhwcRuns();
  Tensor x = Input(2, 5);
  auto want = (*a)->Run({{"x", x}});
  auto got = (*s)->Run({{"x", x}});
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(cpu::OneDnnConvNhwcRuns(), runs + 4);
  EXPECT_LT(RelL2((*got)[0], (*want)[0]), 1e-6);
}

// Each oneDNN plan keeps the memory objects it passes and points them at a
// call's buffers (onednn_conv_nhwc.cc): steps from four threads at once,
// each with inputs of its own at batch 1 and 2, give what the NCHW session
// gives for those inputs, so no call reads another's buffers or an earlier
// step's.
TEST(ConvLayoutSessionTest, OneDnnChannelsLastStepsFromFourThreadsMatchNchw) {
  if (!cpu::OneDnnConvolutionsBuiltIn()) {
    GTEST_SKIP() << "this build has no oneDNN convolution";
  }
  RuntimeConfig nchw;
  nchw.set_use_gpu(false);
  nchw.set_conv_layout(CONV_LAYOUT_NCHW);
  // Below the thread count whose regions all run on OpenMP teams.
  nchw.set_intra_op_threads(2);
  RuntimeConfig config;
  config.set_use_gpu(false);
  config.set_intra_op_threads(2);
  auto a = MakeSession(nchw);
  auto s = MakeSession(config);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(NhwcNodes(**s), 5);
  constexpr int kThreads = 4, kSteps = 12;
  std::vector<Tensor> inputs, wants;
  for (int i = 0; i < kThreads * kSteps; ++i) {
    inputs.push_back(Input(1 + i % 2, i));
    auto want = (*a)->Run({{"x", inputs.back()}});
    ASSERT_TRUE(want.ok()) << want.status();
    wants.push_back((*want)[0]);
  }
  std::vector<double> worst(kThreads, 0.0);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < kSteps; ++k) {
        const int i = t * kSteps + k;
        auto got = (*s)->Run({{"x", inputs[i]}});
        if (!got.ok()) {
          errors[t] = got.status().ToString();
          return;
        }
        worst[t] = std::max(worst[t], RelL2((*got)[0], wants[i]));
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_LT(worst[t], 1e-6) << "thread " << t;
  }
}

// Such a session runs its nodes one at a time unless inter_op_threads is
// set (each convolution takes every core on one OpenMP team), and says so.
TEST(ConvLayoutSessionTest, OneDnnChannelsLastRunsNodesOneAtATime) {
  if (!cpu::OneDnnConvolutionsBuiltIn()) {
    GTEST_SKIP() << "this build has no oneDNN convolution";
  }
  auto said = [](const Session& s) {
    for (const std::string& line : s.log()) {
      if (line.find("nodes run one at a time") != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  RuntimeConfig config;
  config.set_use_gpu(false);
  auto s = MakeSession(config);
  ASSERT_TRUE(s.ok()) << s.status();
  // (One core has one inter-op thread anyway.)
  EXPECT_EQ(said(**s), std::thread::hardware_concurrency() > 1);
  config.set_inter_op_threads(2);
  auto parallel = MakeSession(config);
  ASSERT_TRUE(parallel.ok()) << parallel.status();
  EXPECT_FALSE(said(**parallel));
  RuntimeConfig nchw;
  nchw.set_use_gpu(false);
  nchw.set_conv_layout(CONV_LAYOUT_NCHW);
  // Below the thread count whose regions all run on OpenMP teams.
  nchw.set_intra_op_threads(2);
  auto loops = MakeSession(nchw);
  ASSERT_TRUE(loops.ok()) << loops.status();
  EXPECT_FALSE(said(**loops));
  Tensor x = Input(1, 3);
  auto a = (*s)->Run({{"x", x}});
  auto b = (*parallel)->Run({{"x", x}});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_LT(RelL2((*a)[0], (*b)[0]), 1e-6);
}

bool SaysOneAtATime(const Session& s) {
  for (const std::string& line : s.log()) {
    if (line.find("nodes run one at a time") != std::string::npos) return true;
  }
  return false;
}

// The rule is the CPU provider's, asked about the nodes placed on it: a
// float32 model without convolutions (two towers of MatMuls) keeps its
// inter-op threads below the thread count whose regions run on OpenMP
// teams, whatever oneDNN would do with convolutions; from it, it runs one
// node at a time.
TEST(ConvLayoutSessionTest, ModelsWithoutConvolutionsKeepTheirInterOpThreads) {
  DefMaker m;
  m.Node("x", "Input", {},
         {{"dtype", MakeTypeAttr(DT_FLOAT)}, {"shape", MakeShapeAttr(Shape({-1, 8}))}})
      .Const("w1", Weights({8, 8}, 1))
      .Const("w2", Weights({8, 8}, 2))
      .Node("a", "MatMul", {"x", "w1"})
      .Node("ra", "Relu", {"a"})
      .Node("b", "MatMul", {"x", "w2"})
      .Node("rb", "Relu", {"b"})
      .Node("y", "Add", {"ra", "rb"});
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(m.def());
  ASSERT_TRUE(g.ok()) << g.status();
  RuntimeConfig config;
  config.set_use_gpu(false);
  config.set_inter_op_threads(0);
  config.set_intra_op_threads(cpu::kLeastThreadsForTeamRegions);
  absl::StatusOr<std::unique_ptr<const Graph>> g2 = BuildGraph(m.def());
  ASSERT_TRUE(g2.ok()) << g2.status();
  auto teams = Session::Create(*std::move(g2), config);
  ASSERT_TRUE(teams.ok()) << teams.status();
  // (One core has one inter-op thread anyway.)
  EXPECT_EQ(SaysOneAtATime(**teams),
            cpu::OmpTeamsBuiltIn() && std::thread::hardware_concurrency() > 1);
  config.set_intra_op_threads(cpu::kLeastThreadsForTeamRegions - 1);
  auto s = Session::Create(*std::move(g), config);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(SaysOneAtATime(**s));
  Tensor x = Weights({3, 8}, 3);
  auto y = (*s)->Run({{"x", x}});
  ASSERT_TRUE(y.ok()) << y.status();
  // Against the sums by hand.
  const Tensor w1 = Weights({8, 8}, 1), w2 = Weights({8, 8}, 2);
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 8; ++c) {
      double a = 0, b = 0;
      for (int64_t k = 0; k < 8; ++k) {
        a += double{x.data<float>()[r * 8 + k]} * w1.data<float>()[k * 8 + c];
        b += double{x.data<float>()[r * 8 + k]} * w2.data<float>()[k * 8 + c];
      }
      EXPECT_NEAR((*y)[0].data<float>()[r * 8 + c],
                  std::max(a, 0.0) + std::max(b, 0.0), 1e-5);
    }
  }
}

// cpu_convolutions LOOPS: the CPU provider runs no convolution on oneDNN,
// so AUTO stays NCHW, nothing runs one at a time, and the loops give the
// same outputs.
TEST(ConvLayoutSessionTest, CpuConvolutionsLoopsStaysNchwOnTheLoops) {
  RuntimeConfig config;
  config.set_use_gpu(false);
  // Below the thread count whose regions all run on OpenMP teams (there
  // every node runs one at a time, convolutions or not).
  config.set_intra_op_threads(cpu::kLeastThreadsForTeamRegions - 1);
  RuntimeConfig loops = config;
  loops.set_cpu_convolutions(CPU_CONVOLUTIONS_LOOPS);
  auto a = MakeSession(config);
  auto s = MakeSession(loops);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(NhwcNodes(**s), 0);
  EXPECT_FALSE(SaysOneAtATime(**s));
  Tensor x = Input(2, 9);
  auto want = (*a)->Run({{"x", x}});
  ASSERT_TRUE(want.ok()) << want.status();
  const int64_t nchw_runs = cpu::OneDnnConvRuns();
  const int64_t nhwc_runs = cpu::OneDnnConvNhwcRuns();
  auto got = (*s)->Run({{"x", x}});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(cpu::OneDnnConvRuns(), nchw_runs);
  EXPECT_EQ(cpu::OneDnnConvNhwcRuns(), nhwc_runs);
  EXPECT_LT(RelL2((*got)[0], (*want)[0]), 1e-6);
}

TEST(ConvLayoutSessionTest, AnUnknownConvLayoutIsAConfigError) {
  RuntimeConfig config;
  config.set_use_gpu(false);
  config.set_conv_layout(static_cast<ConvLayout>(7));
  auto s = MakeSession(config);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << s.status();
  EXPECT_NE(s.status().message().find("conv_layout"), std::string::npos) << s.status();
}

// The GPU: both layouts in each precision against the CPU's NCHW float32,
// batch 1 and 3, several steps (the later ones replay a CUDA graph).
TEST(ConvLayoutSessionTest, NhwcMatchesNchwOnTheGpu) {
  SKIP_WITHOUT_GPU();
  RuntimeConfig cpu_config;
  cpu_config.set_use_gpu(false);
  cpu_config.set_optimization_level(OPTIMIZATION_NONE);
  auto cpu = MakeSession(cpu_config);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  for (Precision precision : {PRECISION_MODEL, PRECISION_FLOAT16, PRECISION_BFLOAT16}) {
    for (ConvLayout layout : {CONV_LAYOUT_NCHW, CONV_LAYOUT_NHWC, CONV_LAYOUT_AUTO}) {
      SCOPED_TRACE(absl::StrCat("precision ", Precision_Name(precision), ", ",
                                ConvLayout_Name(layout)));
      RuntimeConfig config;
      config.set_precision(precision);
      config.set_conv_layout(layout);
      auto gpu = MakeSession(config);
      ASSERT_TRUE(gpu.ok()) << gpu.status();
      // AUTO: NHWC with a 16-bit precision where cuDNN runs the convolutions.
      const bool want_nhwc = layout == CONV_LAYOUT_NHWC ||
                             (layout == CONV_LAYOUT_AUTO && precision != PRECISION_MODEL &&
                              GetCudnnInfo().usable);
      EXPECT_EQ(NhwcNodes(**gpu), want_nhwc ? 5 : 0);
      const double tol = precision == PRECISION_MODEL      ? 1e-5
                         : precision == PRECISION_FLOAT16 ? 1e-2
                                                          : 3e-2;
      for (int64_t batch : {1, 3}) {
        for (int step = 0; step < 4; ++step) {
          Tensor x = Input(batch, step);
          auto want = (*cpu)->Run({{"x", x}});
          auto got = (*gpu)->Run({{"x", x}});
          ASSERT_TRUE(want.ok()) << want.status();
          ASSERT_TRUE(got.ok()) << "batch " << batch << " step " << step << ": "
                                << got.status();
          EXPECT_LT(RelL2((*got)[0], (*want)[0]), tol)
              << "batch " << batch << " step " << step;
        }
      }
    }
  }
}

}  // namespace
}  // namespace sluice::conv_layout_test
