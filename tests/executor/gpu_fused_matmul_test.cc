// FusedMatMul in a GPU session: linear layers the optimizer fuses (bias +
// residual + Relu, bias + tanh Gelu) run on cuBLASLt, the steps after the
// first replay as a CUDA graph (the cuBLASLt call and its workspace are
// recorded), and every step matches the unoptimised graph on the CPU, in
// float32 and with precision float16.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor/session.h"
#include "google/protobuf/text_format.h"
#include "graph/loader.h"
#include "gtest/gtest.h"
#include "optimizer/pipeline.h"
#include "tests/executor/gpu_test_util.h"

namespace sluice::gpu_fused_matmul_test {
namespace {

// h = relu(x w1 + b1 + x); y = gelu_tanh(h w2 + b2), x float32[?, 64].
GraphDef LayersDef() {
  GraphDef def;
  const std::string text = R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: -1 dim: 64 } } } }
    node { name: "w1" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 64 dim: 64 } } } } }
    node { name: "b1" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 64 } } } } }
    node { name: "w2" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 64 dim: 96 } } } } }
    node { name: "b2" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: 96 } } } } }
    node { name: "mm1" op: "MatMul" input: "x" input: "w1" }
    node { name: "bias1" op: "Add" input: "b1" input: "mm1" }
    node { name: "res1" op: "Add" input: "bias1" input: "x" }
    node { name: "h" op: "Relu" input: "res1" }
    node { name: "mm2" op: "MatMul" input: "h" input: "w2" }
    node { name: "bias2" op: "Add" input: "mm2" input: "b2" }
    node { name: "y" op: "Gelu" input: "bias2"
           attr { key: "approximate" value { s: "tanh" } } }
    signature { inputs { name: "x" } outputs { name: "y" tensor: "y" } }
  )pb";
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def));
  for (int node : {1, 2, 3, 4}) {
    TensorProto* t = def.mutable_node(node)->mutable_attr()->at("value").mutable_tensor();
    int64_t n = 1;
    for (int64_t d : t->shape().dim()) n *= d;
    for (int64_t i = 0; i < n; ++i) {
      t->add_float_val(static_cast<float>((i * 37 + node * 11) % 101) / 202.0f - 0.25f);
    }
  }
  return def;
}

std::vector<float> Input(int rows, int seed) {
  std::vector<float> x(rows * 64);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>((i * 7 + seed * 13) % 29) / 29.0f - 0.4f;
  }
  return x;
}

absl::StatusOr<std::unique_ptr<Session>> MakeSession(const RuntimeConfig& config) {
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(LayersDef());
  if (!g.ok()) return g.status();
  return Session::Create(*std::move(g), config);
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

TEST(GpuFusedMatMulTest, TheOptimizerMakesTwoFusedMatMuls) {
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(LayersDef());
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<OptimizedGraph> opt =
      OptimizeGraph(*std::move(g), OPTIMIZATION_ALL, PassOptions{});
  ASSERT_TRUE(opt.ok()) << opt.status();
  int fused = 0;
  for (const Node& n : opt->graph->nodes()) fused += n.op() == "FusedMatMul";
  EXPECT_EQ(fused, 2);
  EXPECT_EQ(opt->graph->FindNode("h")->op(), "FusedMatMul");
  EXPECT_EQ(opt->graph->FindNode("y")->op(), "FusedMatMul");
}

TEST(GpuFusedMatMulTest, StepsReplayAsACudaGraphAndMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  RuntimeConfig cpu_config;
  cpu_config.set_use_gpu(false);
  cpu_config.set_optimization_level(OPTIMIZATION_NONE);
  auto cpu = MakeSession(cpu_config);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  for (Precision precision : {PRECISION_MODEL, PRECISION_FLOAT16}) {
    SCOPED_TRACE(precision == PRECISION_MODEL ? "float32" : "float16");
    RuntimeConfig config;
    config.set_precision(precision);
    auto gpu = MakeSession(config);
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    const double tol = precision == PRECISION_MODEL ? 1e-5 : 1e-2;
    for (int step = 0; step < 6; ++step) {
      const int rows = 24;
      Tensor x = Tensor::FromVector(Input(rows, step), Shape({rows, 64}));
      auto want = (*cpu)->Run({{"x", x}});
      auto got = (*gpu)->Run({{"x", x}});
      ASSERT_TRUE(want.ok()) << want.status();
      ASSERT_TRUE(got.ok()) << "step " << step << ": " << got.status();
      EXPECT_LT(RelL2((*got)[0], (*want)[0]), tol) << "step " << step;
    }
    EXPECT_GE((*gpu)->stats().gpu_graph_steps, 4);
  }
}

}  // namespace
}  // namespace sluice::gpu_fused_matmul_test
