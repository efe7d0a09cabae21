#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "optimizer/pass.h"
#include "optimizer/pipeline.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test::reduced_precision_test {
namespace {



PassOptions Reduced(DataType t) {
  PassOptions o;
  o.reduced_precision = t;
  return o;
}

// x [4, 16] -> MatMul w1 -> + b1 -> Relu -> MatMul w2 -> Softmax.
GraphMaker Mlp() {
  GraphMaker m;
  m.Input("x", {4, 16})
      .Const("w1", Values(16 * 32, 1, -0.5f, 0.5f), {16, 32})
      .Const("b1", Values(32, 2, -0.1f, 0.1f), {32})
      .Const("w2", Values(32 * 8, 3, -0.5f, 0.5f), {32, 8})
      .Op("h", "MatMul", {"x", "w1"})
      .Op("hb", "Add", {"h", "b1"})
      .Op("r", "Relu", {"hb"})
      .Op("logits", "MatMul", {"r", "w2"})
      .Op("probs", "Softmax", {"logits"}, {{"axis", MakeIntAttr(-1)}})
      .Output("probs");
  return m;
}

TEST(ReducedPrecisionPassTest, RunsRMSNormInTheReducedType) {
  // RMSNorm keeps float32 statistics in its kernels, as LayerNorm does, so
  // it runs on 16-bit values with its scale converted once.
  GraphMaker m;
  m.Input("x", {4, 64})
      .Const("scale", Values(64, 4, 0.5f, 1.5f), {64})
      .Op("y", "RMSNorm", {"x", "scale"}, {{"epsilon", MakeFloatAttr(1e-6f)}})
      .Output("y");
  auto g = m.Build();
  for (DataType t : {DT_FLOAT16, DT_BFLOAT16}) {
    PassOutput out = RunPass(*MakeReducedPrecisionPass(), *g, Reduced(t));
    ASSERT_NE(out.graph, nullptr);
    const Node* y = out.graph->FindNode("y");
    ASSERT_NE(y, nullptr);
    EXPECT_EQ(y->output_dtype(0), t);
    EXPECT_TRUE(out.graph->node(y->input(1).node).is_const());
    EXPECT_EQ(OpCounts(*out.graph)["Cast"], 2);
    ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 21), 2e-2, 2e-2);
  }
}

TEST(ReducedPrecisionPassTest, RunsTheProductsInFloat16AndCastsAtTheEdges) {
  auto g = Mlp().Build();
  PassOutput out = RunPass(*MakeReducedPrecisionPass(), *g, Reduced(DT_FLOAT16));
  ASSERT_NE(out.graph, nullptr);
  const Graph& r = *out.graph;
  for (const char* name : {"h", "hb", "r", "logits", "probs"}) {
    const Node* n = r.FindNode(name);
    ASSERT_NE(n, nullptr) << name;
    EXPECT_EQ(n->output_dtype(0), DT_FLOAT16) << name;
  }
  // The weights converted once, as constants, not cast per step.
  for (const char* name : {"w1/float16", "b1/float16", "w2/float16"}) {
    const Node* n = r.FindNode(name);
    ASSERT_NE(n, nullptr) << name;
    EXPECT_TRUE(n->is_const()) << name;
    EXPECT_EQ(n->output_dtype(0), DT_FLOAT16);
  }
  // One Cast in (the graph input), one out (the graph output).
  EXPECT_EQ(OpCounts(r)["Cast"], 2);
  EXPECT_EQ(OpOf(r, "x/to_float16"), "Cast");
  EXPECT_EQ(OpOf(r, "probs/to_float32"), "Cast");
  ASSERT_EQ(r.outputs().size(), 1u);
  EXPECT_EQ(r.outputs()[0].name, "probs");
  EXPECT_EQ(r.node(r.outputs()[0].tensor.node).name(), "probs/to_float32");
  EXPECT_EQ(r.node(r.outputs()[0].tensor.node).output_dtype(0), DT_FLOAT);
  EXPECT_NE(out.changes[0].find("5 of 9 nodes run in float16"),
            std::string::npos)
      << out.changes[0];
}

TEST(ReducedPrecisionPassTest, OutputsStayWithinTheReducedTypesError) {
  auto g = Mlp().Build();
  Feeds feeds = RandomFeeds(*g, 4);
  absl::StatusOr<std::vector<Tensor>> want = RunAsIs(*g, feeds);
  ASSERT_TRUE(want.ok()) << want.status();
  for (DataType t : {DT_FLOAT16, DT_BFLOAT16}) {
    SCOPED_TRACE(DataTypeName(t));
    PassOutput out = RunPass(*MakeReducedPrecisionPass(), *g, Reduced(t));
    ASSERT_NE(out.graph, nullptr);
    absl::StatusOr<std::vector<Tensor>> got = RunAsIs(*out.graph, feeds);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ((*got)[0].dtype(), DT_FLOAT);
    const double err = RelL2((*got)[0], (*want)[0]);
    // float16 keeps 11 bits, bfloat16 8: a few roundings of each.
    EXPECT_LT(err, t == DT_FLOAT16 ? 2e-3 : 2e-2);
    // And the comparison is not vacuous: the reduced graph did round.
    EXPECT_GT(err, 1e-6);
  }
}

TEST(ReducedPrecisionPassTest, KeepsRangeLosingOpsInFloat32) {
  GraphMaker m;
  m.Input("x", {2, 8})
      .Const("w", Values(64, 5, -1, 1), {8, 8})
      .Op("y", "MatMul", {"x", "w"})
      .Op("e", "Exp", {"y"})
      .Op("s", "ReduceSum", {"e"},
          {{"axes", Ints({1})}, {"keepdims", MakeBoolAttr(true)}})
      .Op("z", "Mul", {"e", "s"})
      .Output("z");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeReducedPrecisionPass(), *g, Reduced(DT_FLOAT16));
  ASSERT_NE(out.graph, nullptr);
  const Graph& r = *out.graph;
  EXPECT_EQ(r.FindNode("y")->output_dtype(0), DT_FLOAT16);
  EXPECT_EQ(r.FindNode("e")->output_dtype(0), DT_FLOAT);
  EXPECT_EQ(r.FindNode("s")->output_dtype(0), DT_FLOAT);
  // Exp reads y through one Cast back to float32; Mul reads both float32
  // values through Casts down; its output goes back up for the graph.
  EXPECT_EQ(OpOf(r, "y/to_float32"), "Cast");
  EXPECT_EQ(r.FindNode("z")->output_dtype(0), DT_FLOAT16);
  EXPECT_EQ(OpOf(r, "e/to_float16"), "Cast");
  EXPECT_EQ(OpOf(r, "s/to_float16"), "Cast");
  EXPECT_EQ(OpOf(r, "z/to_float32"), "Cast");
  Feeds feeds = RandomFeeds(*g, 6);
  absl::StatusOr<std::vector<Tensor>> want = RunAsIs(*g, feeds);
  absl::StatusOr<std::vector<Tensor>> got = RunAsIs(r, feeds);
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_LT(RelL2((*got)[0], (*want)[0]), 5e-3);
}

TEST(ReducedPrecisionPassTest, Float16ClampsHugeConstantsSoMasksStayFinite) {
  // BERT-style additive mask: (1 - m) * -3.4e38, added to the scores.
  GraphMaker m;
  m.Input("scores", {2, 4})
      .Input("mask", {2, 4})
      .Const("one", {1.0f}, {})
      .Const("big", {-3.4e38f}, {})
      .Op("inv", "Sub", {"one", "mask"})
      .Op("bias", "Mul", {"inv", "big"})
      .Op("masked", "Add", {"scores", "bias"})
      .Op("p", "Softmax", {"masked"}, {{"axis", MakeIntAttr(-1)}})
      .Output("p");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeReducedPrecisionPass(), *g, Reduced(DT_FLOAT16));
  ASSERT_NE(out.graph, nullptr);
  const Node* big = out.graph->FindNode("big/float16");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(static_cast<float>(big->const_value()->data<half>()[0]), -65504.0f);
  // Mask of ones and zeros: unmasked positions would be 0 * -inf = NaN
  // without the clamp.
  Feeds feeds = RandomFeeds(*g, 7);
  for (int64_t i = 0; i < 8; ++i) {
    feeds[1].second.data<float>()[i] = i % 3 == 0 ? 0.0f : 1.0f;
  }
  absl::StatusOr<std::vector<Tensor>> got = RunAsIs(*out.graph, feeds);
  ASSERT_TRUE(got.ok()) << got.status();
  for (int64_t i = 0; i < 8; ++i) {
    EXPECT_TRUE(std::isfinite((*got)[0].data<float>()[i])) << i;
  }
}

TEST(ReducedPrecisionPassTest, CastToFloat32BecomesCastToTheReducedType) {
  GraphMaker m;
  m.Input("ids", {2, 3}, DT_INT64)
      .Input("x", {2, 3})
      .Op("f", "Cast", {"ids"}, {{"DstT", MakeTypeAttr(DT_FLOAT)}})
      .Op("y", "Mul", {"x", "f"})
      .Output("y");
  auto g = m.Build();
  PassOutput out =
      RunPass(*MakeReducedPrecisionPass(), *g, Reduced(DT_BFLOAT16));
  ASSERT_NE(out.graph, nullptr);
  const Node* f = out.graph->FindNode("f");
  EXPECT_EQ(f->output_dtype(0), DT_BFLOAT16);
  EXPECT_EQ(out.graph->FindNode("y")->input(1).node, f->id());
  // Only x's Cast in and y's Cast out.
  EXPECT_EQ(OpCounts(*out.graph)["Cast"], 3);
}

TEST(ReducedPrecisionPassTest, LeavesFloat32ModelsAloneWithoutAPrecision) {
  auto g = Mlp().Build();
  PassOutput out = RunPass(*MakeReducedPrecisionPass(), *g, PassOptions{});
  EXPECT_EQ(out.graph, nullptr);
  EXPECT_TRUE(out.changes.empty());
}

TEST(ReducedPrecisionPassTest, LeavesIntegerAndFloat64GraphsAlone) {
  GraphMaker m;
  m.Input("a", {3}, DT_INT64).Input("b", {3}, DT_DOUBLE);
  m.Op("c", "Add", {"a", "a"}).Op("d", "Mul", {"b", "b"});
  auto g = m.Build();
  PassOutput out = RunPass(*MakeReducedPrecisionPass(), *g, Reduced(DT_FLOAT16));
  EXPECT_EQ(out.graph, nullptr);
}

TEST(ReducedPrecisionPipelineTest, RunsAtEveryLevelAndDropsTheFloat32Weights) {
  for (OptimizationLevel level : {OPTIMIZATION_NONE, OPTIMIZATION_ALL}) {
    SCOPED_TRACE(OptimizationLevelName(level));
    absl::StatusOr<OptimizedGraph> opt =
        OptimizeGraph(Mlp().Build(), level, Reduced(DT_BFLOAT16));
    ASSERT_TRUE(opt.ok()) << opt.status();
    EXPECT_EQ(opt->records[opt->records.size() - 2].pass, "reduced_precision");
    EXPECT_EQ(opt->graph->FindNode("w1"), nullptr);  // dead now
    EXPECT_NE(opt->graph->FindNode("w1/bfloat16"), nullptr);
  }
}

TEST(ReducedPrecisionPipelineTest, TheFloat32WeightsAreFreed) {
  for (DataType t : {DT_FLOAT16, DT_BFLOAT16}) {
    for (OptimizationLevel level : {OPTIMIZATION_NONE, OPTIMIZATION_ALL}) {
      SCOPED_TRACE(
          absl::StrCat(DataTypeName(t), " ", OptimizationLevelName(level)));
      auto g = Mlp().Build();
      std::map<std::string, std::weak_ptr<Buffer>> float32;
      for (const char* name : {"w1", "b1", "w2"}) {
        float32[name] = ConstBuffer(*g, name);
        ASSERT_FALSE(float32[name].expired()) << name;
      }
      absl::StatusOr<OptimizedGraph> opt =
          OptimizeGraph(std::move(g), level, Reduced(t));
      ASSERT_TRUE(opt.ok()) << opt.status();
      const std::string w1 = absl::StrCat("w1/", DataTypeName(t));
      EXPECT_EQ(OpOf(*opt->graph, w1), "Const");
      for (const auto& [name, buffer] : float32) {
        EXPECT_TRUE(buffer.expired()) << name;
      }
      auto given = Mlp().Build();
      Feeds feeds = RandomFeeds(*given, 10);
      absl::StatusOr<std::vector<Tensor>> want = RunAsIs(*given, feeds);
      absl::StatusOr<std::vector<Tensor>> got = RunAsIs(*opt->graph, feeds);
      ASSERT_TRUE(want.ok()) << want.status();
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_LT(RelL2((*got)[0], (*want)[0]), t == DT_FLOAT16 ? 2e-3 : 2e-2);
    }
  }
}

TEST(ReducedPrecisionPipelineTest, MapsPrecisionsToDtypes) {
  EXPECT_EQ(ReducedPrecisionType(PRECISION_FLOAT16), DT_FLOAT16);
  EXPECT_EQ(ReducedPrecisionType(PRECISION_MODEL), DT_INVALID);
}

TEST(ReducedPrecisionPipelineTest, SessionRunsTheModelInBfloat16) {
  auto g = Mlp().Build();
  Feeds feeds = RandomFeeds(*g, 9);
  absl::StatusOr<std::vector<Tensor>> want = RunAsIs(*g, feeds);
  ASSERT_TRUE(want.ok());
  RuntimeConfig config;
  config.set_use_gpu(false);
  config.set_precision(PRECISION_BFLOAT16);
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Create(Copy(*g), config);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_NE((*s)->graph().FindNode("w2/bfloat16"), nullptr);
  absl::StatusOr<std::vector<Tensor>> got = (*s)->Run(feeds);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ((*got)[0].dtype(), DT_FLOAT);
  EXPECT_LT(RelL2((*got)[0], (*want)[0]), 2e-2);
  // Fetching the output by name gives the model's dtype too.
  absl::StatusOr<std::vector<Tensor>> named = (*s)->Run(feeds, {"probs"});
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ((*named)[0].dtype(), DT_FLOAT);
}

}  // namespace
}  // namespace sluice::optimizer_test::reduced_precision_test
