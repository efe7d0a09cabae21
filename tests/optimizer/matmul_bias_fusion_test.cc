#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"
#include "optimizer/pipeline.h"
#include "testing/compare.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test::matmul_bias_fusion_test {
namespace {

// A linear layer's tail: x [2, 3, 8] x w [8, 6] -> + b [6] (bias first, as
// PyTorch exports it) -> [+ residual r] -> [activation].
// `activation` is "", "relu", "gelu_tanh" or "gelu_erf".
GraphMaker LinearTail(bool residual, const std::string& activation,
                      std::vector<int64_t> bias_shape = {6}) {
  GraphMaker m;
  m.Input("x", {2, 3, 8})
      .Input("r", {2, 3, 6})
      .Const("w", Values(8 * 6, 1, -1, 1), {8, 6})
      .Const("b", Values(6, 2, -1, 1), bias_shape)
      .Op("mm", "MatMul", {"x", "w"})
      .Op("bias", "Add", {"b", "mm"});
  std::string last = "bias";
  if (residual) {
    m.Op("sum", "Add", {last, "r"});
    last = "sum";
  } else {
    m.Op("keep_r", "Neg", {"r"}).Output("keep_r");
  }
  if (activation == "relu") {
    m.Op("y", "Relu", {last});
    last = "y";
  } else if (activation == "gelu_tanh" || activation == "gelu_erf") {
    m.Op("y", "Gelu", {last},
         {{"approximate",
           MakeStringAttr(activation == "gelu_tanh" ? "tanh" : "none")}});
    last = "y";
  }
  m.Output(last);
  return m;
}

TEST(MatMulBiasFusionPassTest, FusesTheBias) {
  auto g = LinearTail(false, "").Build();
  PassOutput out = RunPass(*MakeMatMulBiasFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "bias"), "FusedMatMul");
  EXPECT_EQ(OpOf(*out.graph, "mm"), "(none)");
  const Node* y = out.graph->FindNode("bias");
  ASSERT_EQ(y->num_inputs(), 3);
  EXPECT_EQ(out.graph->node(y->input(0).node).name(), "x");
  EXPECT_EQ(out.graph->node(y->input(1).node).name(), "w");
  EXPECT_EQ(out.graph->node(y->input(2).node).name(), "b");
  EXPECT_EQ(y->attrs().GetString("activation").value(), "none");
  EXPECT_FALSE(y->attrs().GetBool("transpose_b").value());
  EXPECT_EQ(y->output_shape(0), Shape({2, 3, 6}));
  ASSERT_EQ(out.changes.size(), 1u);
  EXPECT_NE(out.changes[0].find("'mm', 'bias'"), std::string::npos)
      << out.changes[0];
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 21));
}

TEST(MatMulBiasFusionPassTest, FusesBiasWithReluAndWithTanhGelu) {
  for (const char* act : {"relu", "gelu_tanh"}) {
    SCOPED_TRACE(act);
    auto g = LinearTail(false, act).Build();
    PassOutput out = RunPass(*MakeMatMulBiasFusionPass(), *g);
    ASSERT_NE(out.graph, nullptr);
    EXPECT_EQ(OpOf(*out.graph, "y"), "FusedMatMul");
    EXPECT_EQ(out.graph->FindNode("y")->attrs().GetString("activation").value(),
              act);
    EXPECT_EQ(OpCounts(*out.graph)["MatMul"], 0);
    EXPECT_EQ(OpCounts(*out.graph)["Add"], 0);
    EXPECT_EQ(OpCounts(*out.graph)["Relu"] + OpCounts(*out.graph)["Gelu"], 0);
    ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 22));
  }
}

TEST(MatMulBiasFusionPassTest, FusesTheResidualBeforeTheActivation) {
  for (const char* act : {"", "relu"}) {
    SCOPED_TRACE(act);
    auto g = LinearTail(true, act).Build();
    PassOutput out = RunPass(*MakeMatMulBiasFusionPass(), *g);
    ASSERT_NE(out.graph, nullptr);
    const std::string last = std::string(act).empty() ? "sum" : "y";
    EXPECT_EQ(OpOf(*out.graph, last), "FusedMatMul");
    const Node* y = out.graph->FindNode(last);
    ASSERT_EQ(y->num_inputs(), 4);
    EXPECT_EQ(out.graph->node(y->input(3).node).name(), "r");
    EXPECT_EQ(y->attrs().GetInt("num_args").value(), 2);
    EXPECT_EQ(OpCounts(*out.graph)["Add"], 0);
    ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 23));
  }
}

TEST(MatMulBiasFusionPassTest, LeavesTheErfGeluOutsideTheEpilogue) {
  // cuBLASLt's GELU epilogue is the tanh approximation: an erf Gelu would
  // change the result, so only MatMul + bias fuse.
  auto g = LinearTail(false, "gelu_erf").Build();
  PassOutput out = RunPass(*MakeMatMulBiasFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "bias"), "FusedMatMul");
  EXPECT_EQ(
      out.graph->FindNode("bias")->attrs().GetString("activation").value(),
      "none");
  EXPECT_EQ(OpOf(*out.graph, "y"), "Gelu");
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 24));
}

TEST(MatMulBiasFusionPassTest, ReshapesABroadcastBiasToOneValuePerColumn) {
  // Gemm's C as [1, N].
  auto g = LinearTail(false, "", {1, 6}).Build();
  PassOutput out = RunPass(*MakeMatMulBiasFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  const Node* y = out.graph->FindNode("bias");
  ASSERT_EQ(y->op(), "FusedMatMul");
  EXPECT_EQ(out.graph->node(y->input(2).node).output_shape(0), Shape({6}));
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 25));
}

TEST(MatMulBiasFusionPassTest, FusesGemmWithTransposedWeight) {
  // ONNX Gemm(transB=1) imports as MatMul(transpose_b) + Add(C).
  GraphMaker m;
  m.Input("x", {5, 8})
      .Const("w", Values(6 * 8, 3, -1, 1), {6, 8})
      .Const("c", Values(6, 4, -1, 1), {6})
      .Op("mm", "MatMul", {"x", "w"}, {{"transpose_b", MakeBoolAttr(true)}})
      .Op("y", "Add", {"mm", "c"})
      .Output("y");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeMatMulBiasFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "y"), "FusedMatMul");
  EXPECT_TRUE(out.graph->FindNode("y")->attrs().GetBool("transpose_b").value());
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 26));
}

// GPT-2's Gemm on [B*S, K] with its bias (or without one, as the dynamo
// exporter leaves a zero bias) -> Reshape back to [B, S, N] -> `tail`: the
// tanh Gelu, or the residual Add of the block's input h. The fused node is
// named after the bias Add, or after the MatMul without a bias.
GraphMaker GemmReshapeTail(bool bias, bool residual) {
  GraphMaker m;
  m.Input("x", {6, 8});
  if (residual) m.Input("h", {2, 3, 10});
  m.Const("w", Values(8 * 10, 9, -1, 1), {8, 10})
      .Op("mm", "MatMul", {"x", "w"});
  std::string product = "mm";
  if (bias) {
    m.Const("b", Values(10, 10, -1, 1), {10}).Op("bias", "Add", {"mm", "b"});
    product = "bias";
  }
  m.Op("r", "Reshape", {product}, {{"shape", Ints({2, 3, 10})}});
  if (residual) {
    m.Op("y", "Add", {"h", "r"});
  } else {
    m.Op("y", "Gelu", {"r"}, {{"approximate", MakeStringAttr("tanh")}});
  }
  m.Output("y");
  return m;
}

TEST(MatMulBiasFusionPassTest, FusesAnActivationBehindAReshape) {
  for (bool bias : {true, false}) {
    SCOPED_TRACE(bias ? "bias" : "no bias");
    auto g = GemmReshapeTail(bias, /*residual=*/false).Build();
    PassOutput out = RunPass(*MakeMatMulBiasFusionPass(), *g);
    ASSERT_NE(out.graph, nullptr);
    const char* fused_name = bias ? "bias" : "mm";
    const Node* fused = out.graph->FindNode(fused_name);
    ASSERT_NE(fused, nullptr);
    EXPECT_EQ(fused->op(), "FusedMatMul");
    EXPECT_EQ(fused->attrs().GetString("activation").value(), "gelu_tanh");
    EXPECT_EQ(OpOf(*out.graph, "y"), "Reshape");
    EXPECT_EQ(OpOf(*out.graph, "r"), "(none)");
    EXPECT_EQ(out.graph->FindNode("y")->output_shape(0), Shape({2, 3, 10}));
    EXPECT_EQ(OpCounts(*out.graph)["Gelu"], 0);
    ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 28));
  }
}

TEST(MatMulBiasFusionPassTest, FusesAResidualBehindAReshape) {
  for (bool bias : {true, false}) {
    SCOPED_TRACE(bias ? "bias" : "no bias");
    auto g = GemmReshapeTail(bias, /*residual=*/true).Build();
    PassOutput out = RunPass(*MakeMatMulBiasFusionPass(), *g);
    ASSERT_NE(out.graph, nullptr);
    const Node* fused = out.graph->FindNode(bias ? "bias" : "mm");
    ASSERT_NE(fused, nullptr);
    EXPECT_EQ(fused->op(), "FusedMatMul");
    ASSERT_EQ(fused->num_inputs(), 4);
    const Node& view = out.graph->node(fused->input(3).node);
    EXPECT_EQ(view.op(), "Reshape");
    EXPECT_EQ(view.output_shape(0), Shape({6, 10}));
    EXPECT_EQ(out.graph->node(view.input(0).node).name(), "h");
    EXPECT_EQ(OpOf(*out.graph, "y"), "Reshape");
    EXPECT_EQ(OpOf(*out.graph, "r"), "(none)");
    EXPECT_EQ(out.graph->FindNode("y")->output_shape(0), Shape({2, 3, 10}));
    EXPECT_EQ(OpCounts(*out.graph)["Add"], 0);
    ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 29));
  }
}

TEST(MatMulBiasFusionPassTest, LeavesAResidualBehindAReshapeThatOthersRead) {
  GraphMaker m;
  m.Input("x", {6, 8})
      .Input("h", {2, 3, 10})
      .Const("w", Values(8 * 10, 9, -1, 1), {8, 10})
      .Const("b", Values(10, 10, -1, 1), {10})
      .Op("mm", "MatMul", {"x", "w"})
      .Op("bias", "Add", {"mm", "b"})
      .Op("r", "Reshape", {"bias"}, {{"shape", Ints({2, 3, 10})}})
      .Op("y", "Add", {"h", "r"})
      .Op("z", "Neg", {"r"})
      .Output("y")
      .Output("z");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeMatMulBiasFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);  // the bias still fuses
  EXPECT_EQ(OpOf(*out.graph, "bias"), "FusedMatMul");
  EXPECT_EQ(out.graph->FindNode("bias")->num_inputs(), 3);
  EXPECT_EQ(OpOf(*out.graph, "y"), "Add");
  EXPECT_EQ(OpOf(*out.graph, "r"), "Reshape");
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 30));
}

// A layer without a bias (Llama's projections, or a Gemm whose zero bias
// the exporter dropped) fuses its residual and activation all the same,
// with a Const of zeros for the bias.
TEST(MatMulBiasFusionPassTest,
     FusesTheResidualAndActivationOfALayerWithoutBias) {
  for (const char* act : {"", "relu", "gelu_tanh"}) {
    SCOPED_TRACE(act);
    GraphMaker m;
    m.Input("x", {2, 3, 8})
        .Input("r", {2, 3, 6})
        .Const("w", Values(8 * 6, 1, -1, 1), {8, 6})
        .Op("mm", "MatMul", {"x", "w"})
        .Op("sum", "Add", {"r", "mm"});
    std::string last = "sum";
    if (std::string(act) == "relu") {
      m.Op("y", "Relu", {last});
      last = "y";
    } else if (std::string(act) == "gelu_tanh") {
      m.Op("y", "Gelu", {last}, {{"approximate", MakeStringAttr("tanh")}});
      last = "y";
    }
    m.Output(last);
    auto g = m.Build();
    PassOutput out = RunPass(*MakeMatMulBiasFusionPass(), *g);
    ASSERT_NE(out.graph, nullptr);
    const Node* y = out.graph->FindNode(last);
    ASSERT_NE(y, nullptr);
    EXPECT_EQ(y->op(), "FusedMatMul");
    ASSERT_EQ(y->num_inputs(), 4);
    const Tensor* zeros = ConstValueOf(*out.graph, y->input(2));
    ASSERT_NE(zeros, nullptr);
    EXPECT_EQ(zeros->shape(), Shape({6}));
    for (int i = 0; i < 6; ++i) EXPECT_EQ(zeros->data<float>()[i], 0.0f);
    EXPECT_EQ(OpCounts(*out.graph)["Add"], 0);
    ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 32));
  }
  // An activation alone, without a bias or a residual.
  GraphMaker m;
  m.Input("x", {4, 8})
      .Const("w", Values(8 * 6, 2, -1, 1), {8, 6})
      .Op("mm", "MatMul", {"x", "w"})
      .Op("y", "Relu", {"mm"})
      .Output("y");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeMatMulBiasFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "y"), "FusedMatMul");
  EXPECT_EQ(out.graph->FindNode("y")->num_inputs(), 3);
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 33));
}

// Nothing after a bias-less MatMul to take in, or an erf Gelu: it stays.
TEST(MatMulBiasFusionPassTest, LeavesABiaslessMatMulWithNothingToFuse) {
  for (bool erf : {false, true}) {
    GraphMaker m;
    m.Input("x", {4, 8})
        .Const("w", Values(8 * 6, 3, -1, 1), {8, 6})
        .Op("mm", "MatMul", {"x", "w"});
    if (erf) {
      m.Op("y", "Gelu", {"mm"}, {{"approximate", MakeStringAttr("none")}})
          .Output("y");
    } else {
      m.Output("mm");
    }
    auto g = m.Build();
    EXPECT_EQ(RunPass(*MakeMatMulBiasFusionPass(), *g).graph, nullptr);
  }
}

TEST(MatMulBiasFusionPassTest, LeavesANonConstantBias) {
  GraphMaker m;
  m.Input("x", {4, 8})
      .Input("b", {6})
      .Const("w", Values(8 * 6, 5, -1, 1), {8, 6})
      .Op("mm", "MatMul", {"x", "w"})
      .Op("y", "Add", {"mm", "b"})
      .Output("y");
  auto g = m.Build();
  EXPECT_EQ(RunPass(*MakeMatMulBiasFusionPass(), *g).graph, nullptr);
}

TEST(MatMulBiasFusionPassTest, LeavesABiasOfTheWrongShape) {
  for (std::vector<int64_t> dims :
       {std::vector<int64_t>{4, 1}, std::vector<int64_t>{4, 6},
        std::vector<int64_t>{1, 1, 4, 6}}) {
    SCOPED_TRACE(Shape(dims).DebugString());
    GraphMaker m;
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    m.Input("x", {4, 8})
        .Const("w", Values(8 * 6, 5, -1, 1), {8, 6})
        .Const("b", Values(static_cast<int>(count), 6, -1, 1), dims)
        .Op("mm", "MatMul", {"x", "w"})
        .Op("y", "Add", {"mm", "b"})
        .Output("y");
    auto g = m.Build();
    EXPECT_EQ(RunPass(*MakeMatMulBiasFusionPass(), *g).graph, nullptr);
  }
}

TEST(MatMulBiasFusionPassTest, LeavesANonConstantWeightAndAFetchedProduct) {
  {
    GraphMaker m;
    m.Input("x", {4, 8})
        .Input("w", {8, 6})
        .Const("b", Values(6, 7, -1, 1), {6})
        .Op("mm", "MatMul", {"x", "w"})
        .Op("y", "Add", {"mm", "b"})
        .Output("y");
    auto g = m.Build();
    EXPECT_EQ(RunPass(*MakeMatMulBiasFusionPass(), *g).graph, nullptr);
  }
  {
    GraphMaker m;
    m.Input("x", {4, 8})
        .Const("w", Values(8 * 6, 8, -1, 1), {8, 6})
        .Const("b", Values(6, 7, -1, 1), {6})
        .Op("mm", "MatMul", {"x", "w"})
        .Op("y", "Add", {"mm", "b"})
        .Output("y")
        .Output("mm");
    auto g = m.Build();
    EXPECT_EQ(RunPass(*MakeMatMulBiasFusionPass(), *g).graph, nullptr);
  }
}

TEST(MatMulBiasFusionPassTest, LeavesNodesThatAskForAnotherDevice) {
  GraphMaker m;
  m.Input("x", {4, 8})
      .Const("w", Values(8 * 6, 8, -1, 1), {8, 6})
      .Const("b", Values(6, 7, -1, 1), {6})
      .Op("mm", "MatMul", {"x", "w"})
      .Op("y", "Add", {"mm", "b"})
      .Output("y");
  GraphDef def = m.def();
  def.mutable_node(3)->set_device("/gpu:0");  // mm
  absl::StatusOr<std::unique_ptr<const Graph>> g = BuildGraph(def);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(RunPass(*MakeMatMulBiasFusionPass(), **g).graph, nullptr);
}

// Property: on seeded random layer stacks (each layer a random choice of
// bias shape, residual, activation and transposed weight), the fused graph
// gives the unfused graph's outputs within 1e-4 relative L2.
TEST(MatMulBiasFusionPassTest, RandomLayerStacksKeepTheirOutputs) {
  const char* kActs[] = {"", "relu", "gelu_tanh", "gelu_erf"};
  for (uint32_t seed = 0; seed < 24; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    GraphMaker m;
    const int64_t width = 4 + static_cast<int64_t>(rng() % 5);
    m.Input("x", {2, 3, width});
    std::string cur = "x";
    const int layers = 1 + static_cast<int>(rng() % 3);
    int fusable = 0, plain = 0;
    for (int l = 0; l < layers; ++l) {
      const std::string p = absl::StrCat("l", l, "_");
      const bool tb = rng() % 2 == 0;
      const bool bias_2d = rng() % 3 == 0;
      const bool residual = rng() % 2 == 0;
      const std::string act = kActs[rng() % 4];
      const bool bias = rng() % 4 != 0;
      m.Const(
          p + "w",
          Values(static_cast<int>(width * width), seed * 10 + l, -0.5f, 0.5f),
          {width, width});
      m.Op(p + "mm", "MatMul", {cur, p + "w"},
           {{"transpose_b", MakeBoolAttr(tb)}});
      std::string last = p + "mm";
      if (bias) {
        m.Const(p + "b",
                Values(static_cast<int>(width), seed * 10 + l + 5, -1, 1),
                bias_2d ? std::vector<int64_t>{1, width}
                        : std::vector<int64_t>{width});
        m.Op(p + "bias", "Add", {p + "mm", p + "b"});
        last = p + "bias";
      }
      if (residual) {
        m.Op(p + "res", "Add", {cur, last});
        last = p + "res";
      }
      if (act == "relu") {
        m.Op(p + "act", "Relu", {last});
        last = p + "act";
      } else if (!act.empty()) {
        m.Op(p + "act", "Gelu", {last},
             {{"approximate",
               MakeStringAttr(act == "gelu_tanh" ? "tanh" : "none")}});
        last = p + "act";
      }
      cur = last;
      // Without a bias: fused when a residual or an activation it computes
      // follows.
      const bool fuses =
          bias || residual || act == "relu" || act == "gelu_tanh";
      fusable += fuses;
      plain += !fuses;
    }
    m.Output(cur);
    auto g = m.Build();
    ASSERT_NE(g, nullptr);
    PassOutput out = RunPass(*MakeMatMulBiasFusionPass(), *g);
    if (fusable == 0) {
      EXPECT_EQ(out.graph, nullptr);
      continue;
    }
    ASSERT_NE(out.graph, nullptr);
    EXPECT_EQ(OpCounts(*out.graph)["FusedMatMul"], fusable);
    EXPECT_EQ(OpCounts(*out.graph)["MatMul"], plain);
    const Feeds feeds = RandomFeeds(*g, seed + 100);
    absl::StatusOr<std::vector<Tensor>> want = RunAsIs(*g, feeds);
    absl::StatusOr<std::vector<Tensor>> got = RunAsIs(*out.graph, feeds);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(want->size(), got->size());
    for (size_t i = 0; i < want->size(); ++i) {
      EXPECT_LT(RelL2((*got)[i], (*want)[i]), 1e-4);
    }
  }
}

// In the pipeline: before elementwise_fusion, so the bias and residual
// Adds go into FusedMatMul, not into a FusedElementwise.
TEST(MatMulBiasFusionPassTest, RunsBeforeElementwiseFusionInThePipeline) {
  auto g = LinearTail(true, "").Build();
  absl::StatusOr<OptimizedGraph> opt =
      OptimizeGraph(Copy(*g), OPTIMIZATION_ALL, PassOptions{});
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_EQ(OpOf(*opt->graph, "sum"), "FusedMatMul");
  EXPECT_EQ(OpCounts(*opt->graph)["FusedElementwise"], 0);
  ExpectSameOutputs(*g, *opt->graph, RandomFeeds(*g, 27));
}

// The pass rewrites no weight, and a [1, N] bias only into a Const of [N]
// over the same bytes: what the pipeline leaves holds each once.
TEST(MatMulBiasFusionPassTest, PipelineKeepsOneCopyOfTheWeightAndBias) {
  auto g = LinearTail(false, "", {1, 6}).Build();
  std::weak_ptr<Buffer> w = ConstBuffer(*g, "w");
  std::weak_ptr<Buffer> b = ConstBuffer(*g, "b");
  ASSERT_FALSE(b.expired());
  absl::StatusOr<OptimizedGraph> opt =
      OptimizeGraph(std::move(g), OPTIMIZATION_ALL, PassOptions{});
  ASSERT_TRUE(opt.ok()) << opt.status();
  const Node* y = opt->graph->FindNode("bias");
  ASSERT_NE(y, nullptr);
  ASSERT_EQ(y->op(), "FusedMatMul");
  EXPECT_EQ(OpOf(*opt->graph, "b"), "(none)");
  EXPECT_EQ(ConstValueOf(*opt->graph, y->input(1))->buffer().get(),
            w.lock().get());
  EXPECT_EQ(ConstValueOf(*opt->graph, y->input(2))->buffer().get(),
            b.lock().get());
  // Held by the optimised graph's Consts alone.
  EXPECT_EQ(w.use_count(), 1);
  EXPECT_EQ(b.use_count(), 1);
  auto given = LinearTail(false, "", {1, 6}).Build();
  ExpectSameOutputs(*given, *opt->graph, RandomFeeds(*given, 28));
}

}  // namespace
}  // namespace sluice::optimizer_test::matmul_bias_fusion_test
