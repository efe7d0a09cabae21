// RMSNorm in a GPU session: LLaMA's norm as PyTorch exports it (Pow,
// ReduceMean, Add, Rsqrt, Mul by x, Mul by the weight) becomes one RMSNorm
// (rms_norm_fusion), runs on /gpu:0, the steps after the first replay as a
// CUDA graph, and every step matches the unoptimised graph on the CPU, in
// float32 and with precision bfloat16; rows of 4096 (the block-per-row
// register kernel) and 9000 (the loop past 8192).
#include <algorithm>
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

namespace sluice::gpu_rms_norm_test {
namespace {

// y = x * rsqrt(mean(x^2, -1) + 1e-6) * w, x float32[?, cols].
GraphDef RmsDef(int64_t cols) {
  GraphDef def;
  const std::string text = absl::StrCat(R"pb(
    node { name: "x" op: "Input"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "shape" value { shape { dim: -1 dim: )pb", cols, R"pb( } } } }
    node { name: "w" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT shape { dim: )pb",
                                        cols, R"pb( } } } } }
    node { name: "two" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT float_val: 2 } } } }
    node { name: "eps" op: "Const"
           attr { key: "value" value { tensor { dtype: DT_FLOAT float_val: 1e-6 } } } }
    node { name: "sq" op: "Pow" input: "x" input: "two" }
    node { name: "ms" op: "ReduceMean" input: "sq"
           attr { key: "axes" value { list { i: -1 } } }
           attr { key: "keepdims" value { b: true } } }
    node { name: "plus_eps" op: "Add" input: "ms" input: "eps" }
    node { name: "inv" op: "Rsqrt" input: "plus_eps" }
    node { name: "n" op: "Mul" input: "x" input: "inv" }
    node { name: "y" op: "Mul" input: "n" input: "w" }
    signature { inputs { name: "x" } outputs { name: "y" tensor: "y" } }
  )pb");
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &def));
  TensorProto* w = def.mutable_node(1)->mutable_attr()->at("value").mutable_tensor();
  for (int64_t i = 0; i < cols; ++i) {
    w->add_float_val(static_cast<float>((i * 37) % 101) / 101.0f + 0.5f);
  }
  return def;
}

std::vector<float> Input(int rows, int64_t cols, int seed) {
  std::vector<float> x(rows * cols);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>((i * 7 + seed * 13) % 29) / 7.0f - 2.0f;
  }
  return x;
}

absl::StatusOr<std::unique_ptr<Session>> MakeSession(int64_t cols,
                                                     const RuntimeConfig& config) {
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(RmsDef(cols));
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

TEST(GpuRMSNormTest, TheOptimizerMakesOneRMSNorm) {
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(RmsDef(64));
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<OptimizedGraph> opt =
      OptimizeGraph(*std::move(g), OPTIMIZATION_ALL, PassOptions{});
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_EQ(opt->graph->FindNode("y")->op(), "RMSNorm");
  EXPECT_EQ(opt->graph->FindNode("ms"), nullptr);
}

TEST(GpuRMSNormTest, StepsReplayAsACudaGraphAndMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  for (int64_t cols : {4096, 9000}) {
    RuntimeConfig cpu_config;
    cpu_config.set_use_gpu(false);
    cpu_config.set_optimization_level(OPTIMIZATION_NONE);
    auto cpu = MakeSession(cols, cpu_config);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    for (Precision precision : {PRECISION_MODEL, PRECISION_BFLOAT16}) {
      SCOPED_TRACE(absl::StrCat(cols, " columns, ",
                                precision == PRECISION_MODEL ? "float32"
                                                             : "bfloat16"));
      RuntimeConfig config;
      config.set_precision(precision);
      auto gpu = MakeSession(cols, config);
      ASSERT_TRUE(gpu.ok()) << gpu.status();
      EXPECT_EQ((*gpu)->graph().FindNode("y")->op(), "RMSNorm");
      const double tol = precision == PRECISION_MODEL ? 1e-5 : 2e-2;
      for (int step = 0; step < 5; ++step) {
        const int rows = 6;
        Tensor x =
            Tensor::FromVector(Input(rows, cols, step), Shape({rows, cols}));
        auto want = (*cpu)->Run({{"x", x}});
        auto got = (*gpu)->Run({{"x", x}});
        ASSERT_TRUE(want.ok()) << want.status();
        ASSERT_TRUE(got.ok()) << "step " << step << ": " << got.status();
        EXPECT_LT(RelL2((*got)[0], (*want)[0]), tol) << "step " << step;
      }
      // The first step runs kernel by kernel, the second records.
      EXPECT_GE((*gpu)->stats().gpu_graph_steps, 3);
    }
  }
}

}  // namespace
}  // namespace sluice::gpu_rms_norm_test
