#include <memory>
#include <utility>

#include "gtest/gtest.h"
#include "optimizer/pass.h"
#include "optimizer/pipeline.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test::layer_norm_fusion_test {
namespace {

// LayerNorm over the last axis as PyTorch (opset < 17) exports it.
GraphMaker Decomposed(bool affine, bool rsqrt, bool mean_read_elsewhere) {
  const std::map<std::string, AttrValue> reduce = {
      {"axes", Ints({-1})}, {"keepdims", MakeBoolAttr(true)}};
  GraphMaker m;
  m.Input("x", {2, 5, 8})
      .Const("two", {2}, {})
      .Const("eps", {1e-5f}, {})
      .Const("gamma", {1, 2, 3, 4, 5, 6, 7, 8}, {8})
      .Const("beta", {0, 1, 0, 1, 0, 1, 0, 1}, {8})
      .Op("mean", "ReduceMean", {"x"}, reduce)
      .Op("d", "Sub", {"x", "mean"})
      .Op("sq", "Pow", {"d", "two"})
      .Op("var", "ReduceMean", {"sq"}, reduce)
      .Op("ve", "Add", {"var", "eps"});
  if (rsqrt) {
    m.Op("root", "Rsqrt", {"ve"}).Op("n", "Mul", {"root", "d"});
  } else {
    m.Op("root", "Sqrt", {"ve"}).Op("n", "Div", {"d", "root"});
  }
  std::string last = "n";
  if (affine) {
    m.Op("scaled", "Mul", {"n", "gamma"}).Op("y", "Add", {"scaled", "beta"});
    last = "y";
  }
  m.Output("out", last);
  if (mean_read_elsewhere) m.Output("mean");
  return m;
}

TEST(LayerNormFusionPassTest, FusesTheAffineForm) {
  auto g = Decomposed(/*affine=*/true, /*rsqrt=*/false, false).Build();
  PassOutput out = RunPass(*MakeLayerNormFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "y"), "LayerNorm");
  for (const char* gone :
       {"mean", "d", "sq", "var", "ve", "root", "n", "scaled"}) {
    EXPECT_EQ(OpOf(*out.graph, gone), "(none)") << gone;
  }
  const Node* ln = out.graph->FindNode("y");
  EXPECT_EQ(*ln->attrs().GetInt("axis"), 2);
  EXPECT_FLOAT_EQ(*ln->attrs().GetFloat("epsilon"), 1e-5f);
  EXPECT_EQ(out.graph->node(ln->input(1).node).name(), "gamma");
  EXPECT_EQ(out.graph->outputs()[0].name, "out");
  ASSERT_EQ(out.changes.size(), 1u);
  EXPECT_NE(out.changes[0].find("fused 9 nodes"), std::string::npos)
      << out.changes[0];
  ExpectSameOutputs(*g, *out.graph,
                                    RandomFeeds(*g, 9));
}

TEST(LayerNormFusionPassTest, FusesTheRsqrtFormWithoutAffine) {
  auto g = Decomposed(/*affine=*/false, /*rsqrt=*/true, false).Build();
  PassOutput out = RunPass(*MakeLayerNormFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "n"), "LayerNorm");
  EXPECT_EQ(OpCounts(*out.graph)["ReduceMean"], 0);
  // Scale of ones and bias of zeros were made for it.
  EXPECT_EQ(OpOf(*out.graph, "n/scale"), "Const");
  EXPECT_EQ(OpOf(*out.graph, "n/bias"), "Const");
  ExpectSameOutputs(*g, *out.graph,
                                    RandomFeeds(*g, 10));
}

TEST(LayerNormFusionPassTest, LeavesAPatternWhoseInsideIsRead) {
  auto g = Decomposed(true, false, /*mean_read_elsewhere=*/true).Build();
  EXPECT_EQ(RunPass(*MakeLayerNormFusionPass(), *g).graph, nullptr);
}

TEST(LayerNormFusionPipelineTest, TheExponentAndEpsilonConstantsAreFreed) {
  // The epsilon becomes an attribute and the square is the kernel's; gamma
  // and beta are LayerNorm's inputs now.
  auto g = Decomposed(/*affine=*/true, /*rsqrt=*/false, false).Build();
  std::weak_ptr<Buffer> two = ConstBuffer(*g, "two");
  std::weak_ptr<Buffer> eps = ConstBuffer(*g, "eps");
  std::weak_ptr<Buffer> gamma = ConstBuffer(*g, "gamma");
  ASSERT_FALSE(two.expired());
  ASSERT_FALSE(eps.expired());
  absl::StatusOr<OptimizedGraph> opt =
      OptimizeGraph(std::move(g), OPTIMIZATION_ALL, PassOptions{});
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_EQ(OpOf(*opt->graph, "y"), "LayerNorm");
  EXPECT_TRUE(two.expired());
  EXPECT_TRUE(eps.expired());
  EXPECT_FALSE(gamma.expired());
  auto given = Decomposed(true, false, false).Build();
  ExpectSameOutputs(*given, *opt->graph, RandomFeeds(*given, 11));
}

}  // namespace
}  // namespace sluice::optimizer_test::layer_norm_fusion_test
