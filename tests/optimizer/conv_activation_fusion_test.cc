#include <map>
#include <memory>
#include <random>
#include <utility>

#include "gtest/gtest.h"
#include "optimizer/graph_rewriter.h"
#include "optimizer/pass.h"
#include "optimizer/pipeline.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test::conv_activation_fusion_test {
namespace {



// A ResNet block's tail: conv -> bias -> (+ residual r) -> Relu.
GraphMaker ConvTail(bool residual, bool relu, std::vector<int64_t> bias_shape) {
  GraphMaker m;
  m.Input("x", {2, 3, 5, 5})
      .Input("r", {2, 4, 5, 5})
      .Const("w", Values(4 * 3 * 3 * 3, 1, -1, 1), {4, 3, 3, 3})
      .Const("b", Values(4, 2, -1, 1), bias_shape)
      .Op("conv", "Conv2D", {"x", "w"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("bias", "Add", {"b", "conv"});
  std::string last = "bias";
  if (residual) {
    m.Op("sum", "Add", {"bias", "r"});
    last = "sum";
  } else {
    m.Op("keep_r", "Neg", {"r"}).Output("keep_r");
  }
  if (relu) {
    m.Op("y", "Relu", {last});
    last = "y";
  }
  m.Output(last);
  return m;
}

TEST(ConvActivationFusionPassTest, FusesBiasResidualAndReluIntoOneNode) {
  auto g = ConvTail(true, true, {1, 4, 1, 1}).Build();
  PassOutput out = RunPass(*MakeConvActivationFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "y"), "FusedConv2D");
  for (const char* gone : {"conv", "bias", "sum"}) {
    EXPECT_EQ(OpOf(*out.graph, gone), "(none)") << gone;
  }
  const Node* y = out.graph->FindNode("y");
  ASSERT_EQ(y->num_inputs(), 4);
  EXPECT_EQ(out.graph->node(y->input(3).node).name(), "r");
  EXPECT_EQ(out.graph->node(y->input(2).node).output_shape(0), Shape({4}));
  EXPECT_EQ(y->attrs().GetString("activation").value(), "relu");
  EXPECT_EQ(y->attrs().GetIntList("pads").value(),
            std::vector<int64_t>({1, 1, 1, 1}));
  ASSERT_EQ(out.changes.size(), 1u);
  EXPECT_NE(out.changes[0].find("'conv', 'bias', 'sum', 'y'"), std::string::npos)
      << out.changes[0];
  ExpectSameOutputs(*g, *out.graph,
                                    RandomFeeds(*g, 8));
}

TEST(ConvActivationFusionPassTest, FusesBiasAloneAndBiasWithRelu) {
  for (bool relu : {false, true}) {
    SCOPED_TRACE(relu ? "with relu" : "bias only");
    auto g = ConvTail(false, relu, {4, 1, 1}).Build();
    PassOutput out = RunPass(*MakeConvActivationFusionPass(), *g);
    ASSERT_NE(out.graph, nullptr);
    const std::string last = relu ? "y" : "bias";
    EXPECT_EQ(OpOf(*out.graph, last), "FusedConv2D");
    EXPECT_EQ(out.graph->FindNode(last)->num_inputs(), 3);
    EXPECT_EQ(OpCounts(*out.graph)["Conv2D"], 0);
    EXPECT_EQ(OpCounts(*out.graph)["Relu"], 0);
    ExpectSameOutputs(*g, *out.graph,
                                      RandomFeeds(*g, 9));
  }
}

// ReLU6 as the ONNX importer writes Clip(0, 6): Maximum with 0, then
// Minimum with 6 (the weights make outputs past 6). Another upper bound
// is not ReLU6 and stays a separate node.
GraphMaker ConvClip(float lower, float upper) {
  GraphMaker m;
  m.Input("x", {2, 3, 5, 5})
      .Const("w", Values(4 * 3 * 3 * 3, 3, -3, 3), {4, 3, 3, 3})
      .Const("b", Values(4, 2, -1, 1), {1, 4, 1, 1})
      .Const("lo", {lower}, {})
      .Const("hi", {upper}, {})
      .Op("conv", "Conv2D", {"x", "w"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("bias", "Add", {"conv", "b"})
      .Op("clip/min", "Maximum", {"bias", "lo"})
      .Op("y", "Minimum", {"clip/min", "hi"})
      .Output("y");
  return m;
}

TEST(ConvActivationFusionPassTest, FusesClipZeroSixAsRelu6) {
  auto g = ConvClip(0.0f, 6.0f).Build();
  PassOutput out = RunPass(*MakeConvActivationFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "y"), "FusedConv2D");
  EXPECT_EQ(out.graph->FindNode("y")->attrs().GetString("activation").value(),
            "relu6");
  EXPECT_EQ(OpCounts(*out.graph)["Maximum"], 0);
  EXPECT_EQ(OpCounts(*out.graph)["Minimum"], 0);
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 10));
}

// Clip's bounds go into the activation, and the bias [1, 4, 1, 1] in as
// [4] over the same bytes: the pipeline keeps neither bound.
TEST(ConvActivationFusionPassTest, PipelineFreesTheClipBounds) {
  auto g = ConvClip(0.0f, 6.0f).Build();
  std::weak_ptr<Buffer> lo = ConstBuffer(*g, "lo");
  std::weak_ptr<Buffer> hi = ConstBuffer(*g, "hi");
  std::weak_ptr<Buffer> b = ConstBuffer(*g, "b");
  ASSERT_FALSE(lo.expired());
  ASSERT_FALSE(hi.expired());
  absl::StatusOr<OptimizedGraph> opt =
      OptimizeGraph(std::move(g), OPTIMIZATION_ALL, PassOptions{});
  ASSERT_TRUE(opt.ok()) << opt.status();
  const Node* y = opt->graph->FindNode("y");
  ASSERT_NE(y, nullptr);
  ASSERT_EQ(y->op(), "FusedConv2D");
  EXPECT_EQ(y->attrs().GetString("activation").value(), "relu6");
  EXPECT_TRUE(lo.expired());
  EXPECT_TRUE(hi.expired());
  EXPECT_EQ(ConstValueOf(*opt->graph, y->input(2))->buffer().get(),
            b.lock().get());
  auto given = ConvClip(0.0f, 6.0f).Build();
  ExpectSameOutputs(*given, *opt->graph, RandomFeeds(*given, 12));
}

TEST(ConvActivationFusionPassTest, AnotherClipIsNotRelu6) {
  for (auto [lower, upper] : {std::pair{0.0f, 5.0f}, std::pair{-1.0f, 6.0f}}) {
    auto g = ConvClip(lower, upper).Build();
    PassOutput out = RunPass(*MakeConvActivationFusionPass(), *g);
    ASSERT_NE(out.graph, nullptr);
    EXPECT_EQ(OpOf(*out.graph, "y"), "Minimum");
    EXPECT_EQ(OpCounts(*out.graph)["FusedConv2D"], 1);
    EXPECT_EQ(OpCounts(*out.graph)["Maximum"], 1);
    for (const Node& n : out.graph->nodes()) {
      if (n.op() == "FusedConv2D") {
        EXPECT_EQ(n.attrs().GetString("activation").value(), "none");
      }
    }
    ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 11));
  }
}

TEST(ConvActivationFusionPassTest, LeavesABiasThatIsNotPerChannel) {
  // [4] broadcasts along W, not along the channels.
  GraphMaker m;
  m.Input("x", {1, 3, 4, 4})
      .Const("w", Values(4 * 3, 5, -1, 1), {4, 3, 1, 1})
      .Const("b", Values(4, 6, -1, 1), {4})
      .Op("conv", "Conv2D", {"x", "w"})
      .Op("y", "Add", {"conv", "b"})
      .Output("y");
  auto g = m.Build();
  EXPECT_EQ(RunPass(*MakeConvActivationFusionPass(), *g).graph, nullptr);
}

TEST(ConvActivationFusionPassTest, LeavesAPatternWhoseMiddleIsFetched) {
  auto m = ConvTail(true, true, {1, 4, 1, 1});
  m.Output("bias");  // the biased convolution is a graph output
  auto g = m.Build();
  PassOutput out = RunPass(*MakeConvActivationFusionPass(), *g);
  // Only conv and bias fuse (under bias's name, so the fetch still works);
  // what reads the fetched node stays.
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "bias"), "FusedConv2D");
  EXPECT_EQ(OpOf(*out.graph, "sum"), "Add");
  EXPECT_EQ(OpOf(*out.graph, "y"), "Relu");
  ExpectSameOutputs(*g, *out.graph,
                                    RandomFeeds(*g, 10));
}

TEST(ConvActivationFusionPassTest, SideInputThatBroadcastsIsNotFused) {
  GraphMaker m;
  m.Input("x", {2, 3, 5, 5})
      .Input("r", {1, 4, 5, 5})  // broadcasts over the batch
      .Const("w", Values(4 * 3 * 9, 1, -1, 1), {4, 3, 3, 3})
      .Const("b", Values(4, 2, -1, 1), {1, 4, 1, 1})
      .Op("conv", "Conv2D", {"x", "w"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("bias", "Add", {"conv", "b"})
      .Op("sum", "Add", {"bias", "r"})
      .Op("y", "Relu", {"sum"})
      .Output("y");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeConvActivationFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "bias"), "FusedConv2D");
  EXPECT_EQ(OpOf(*out.graph, "sum"), "Add");
  EXPECT_EQ(OpOf(*out.graph, "y"), "Relu");
  ExpectSameOutputs(*g, *out.graph,
                                    RandomFeeds(*g, 11));
}

TEST(ConvActivationFusionPassTest, TwoBranchesJoiningGiveTheJoinToOneOfThem) {
  // A ResNet downsampling block's end: relu(bn(conv_a(x)) + bn(conv_b(x))).
  // Either convolution could take the joining Add as its side input; one
  // does, and the other keeps its bias only.
  GraphMaker m;
  m.Input("x", {2, 3, 6, 6})
      .Const("wa", Values(4 * 3 * 9, 1, -1, 1), {4, 3, 3, 3})
      .Const("wb", Values(4 * 3, 2, -1, 1), {4, 3, 1, 1})
      .Const("ba", Values(4, 3, -1, 1), {1, 4, 1, 1})
      .Const("bb", Values(4, 4, -1, 1), {1, 4, 1, 1})
      .Op("conv_a", "Conv2D", {"x", "wa"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("conv_b", "Conv2D", {"x", "wb"})
      .Op("bias_a", "Add", {"conv_a", "ba"})
      .Op("bias_b", "Add", {"conv_b", "bb"})
      .Op("sum", "Add", {"bias_a", "bias_b"})
      .Op("y", "Relu", {"sum"})
      .Output("y");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeConvActivationFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpCounts(*out.graph)["FusedConv2D"], 2);
  EXPECT_EQ(OpCounts(*out.graph)["Conv2D"], 0);
  EXPECT_EQ(OpCounts(*out.graph)["Add"], 0);
  EXPECT_EQ(OpCounts(*out.graph)["Relu"], 0);
  EXPECT_EQ(OpOf(*out.graph, "y"), "FusedConv2D");
  EXPECT_EQ(out.graph->FindNode("y")->num_inputs(), 4);
  ExpectSameOutputs(*g, *out.graph,
                                    RandomFeeds(*g, 12));
}

// MobileNetV3's and EfficientNet's activations after conv + bias: fused
// only where the target's kernels take them
// (PassOptions::fuse_conv_smooth_activations); SiLU as exporters write
// it, Mul(v, Sigmoid(v)).
GraphMaker ConvSmooth(const std::string& act) {
  GraphMaker m;
  m.Input("x", {1, 3, 5, 5})
      .Const("w", Values(4 * 3 * 3 * 3, 1, -1, 1), {4, 3, 3, 3})
      .Const("b", Values(4, 2, -1, 1), {1, 4, 1, 1})
      .Op("conv", "Conv2D", {"x", "w"}, {{"pads", Ints({1, 1, 1, 1})}})
      .Op("bias", "Add", {"conv", "b"});
  if (act == "silu") {
    m.Op("s", "Sigmoid", {"bias"}).Op("y", "Mul", {"bias", "s"});
  } else if (act == "hardsigmoid") {
    m.Op("y", "HardSigmoid", {"bias"},
         {{"alpha", MakeFloatAttr(1.0f / 6)}, {"beta", MakeFloatAttr(0.5f)}});
  } else {
    m.Op("y", act == "hardswish" ? "HardSwish" : "Sigmoid", {"bias"});
  }
  m.Output("y");
  return m;
}

TEST(ConvActivationFusionPassTest, FusesSmoothActivationsWhereTheTargetTakesThem) {
  PassOptions cpu;
  cpu.fuse_conv_smooth_activations = true;
  for (const std::string act : {"hardswish", "hardsigmoid", "sigmoid", "silu"}) {
    SCOPED_TRACE(act);
    auto g = ConvSmooth(act).Build();
    PassOutput out = RunPass(*MakeConvActivationFusionPass(), *g, cpu);
    ASSERT_NE(out.graph, nullptr);
    EXPECT_EQ(OpOf(*out.graph, "y"), "FusedConv2D");
    EXPECT_EQ(out.graph->FindNode("y")->attrs().GetString("activation").value(),
              act);
    // The convolution, its bias Add and the activation's nodes are one.
    std::map<std::string, int> ops = OpCounts(*out.graph);
    EXPECT_EQ(ops["FusedConv2D"], 1);
    for (const char* gone : {"Conv2D", "Add", "HardSwish", "HardSigmoid",
                             "Sigmoid", "Mul"}) {
      EXPECT_EQ(ops[gone], 0) << gone;
    }
    ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 14));
    // Another target: the convolution takes the bias alone.
    PassOutput other = RunPass(*MakeConvActivationFusionPass(), *g);
    ASSERT_NE(other.graph, nullptr);
    EXPECT_EQ(OpOf(*other.graph, "bias"), "FusedConv2D");
    EXPECT_EQ(other.graph->FindNode("bias")->attrs().GetString("activation").value(),
              "none");
  }
}

TEST(ConvActivationFusionPassTest, ASiluWhoseInputIsReadElsewhereIsNotFused) {
  PassOptions cpu;
  cpu.fuse_conv_smooth_activations = true;
  GraphMaker m = ConvSmooth("silu");
  m.Op("other", "Neg", {"bias"}).Output("other");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeConvActivationFusionPass(), *g, cpu);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "y"), "Mul");
  EXPECT_EQ(OpOf(*out.graph, "s"), "Sigmoid");
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 15));
}

}  // namespace
}  // namespace sluice::optimizer_test::conv_activation_fusion_test
