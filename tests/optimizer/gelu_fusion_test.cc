#include <map>
#include <memory>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "optimizer/pass.h"
#include "optimizer/pipeline.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test::gelu_fusion_test {
namespace {

TEST(GeluFusionPassTest, FusesTheErfFormInEachOrder) {
  GraphMaker m;
  m.Input("x", {4, 6})
      .Const("sqrt2", {1.4142135f}, {})
      .Const("inv_sqrt2", {0.70710677f}, {})
      .Const("one", {1}, {})
      .Const("half", {0.5f}, {})
      // PyTorch: Mul(Mul(x, 1 + erf(x / sqrt2)), 0.5)
      .Op("a_div", "Div", {"x", "sqrt2"})
      .Op("a_erf", "Erf", {"a_div"})
      .Op("a_add", "Add", {"a_erf", "one"})
      .Op("a_mul", "Mul", {"x", "a_add"})
      .Op("a", "Mul", {"a_mul", "half"})
      // TensorFlow: Mul(Mul(x, 0.5), 1 + erf(x * (1/sqrt2)))
      .Op("b_scale", "Mul", {"inv_sqrt2", "x"})
      .Op("b_erf", "Erf", {"b_scale"})
      .Op("b_add", "Add", {"one", "b_erf"})
      .Op("b_half", "Mul", {"x", "half"})
      .Op("b", "Mul", {"b_half", "b_add"})
      .Output("a")
      .Output("b");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeGeluFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "a"), "Gelu");
  EXPECT_EQ(OpOf(*out.graph, "b"), "Gelu");
  EXPECT_EQ(*out.graph->FindNode("a")->attrs().GetString("approximate"),
            "none");
  EXPECT_EQ(OpCounts(*out.graph)["Erf"], 0);
  EXPECT_EQ(out.changes.size(), 2u);
  ExpectSameOutputs(*g, *out.graph,
                                    RandomFeeds(*g, 11));
}

TEST(GeluFusionPassTest, FusesTheTanhForm) {
  GraphMaker m;
  m.Input("x", {4, 6})
      .Const("three", {3}, {})
      .Const("c", {0.044715f}, {})
      .Const("k", {0.7978846f}, {})
      .Const("one", {1}, {})
      .Const("half", {0.5f}, {})
      .Op("cube", "Pow", {"x", "three"})
      .Op("cc", "Mul", {"cube", "c"})
      .Op("inner", "Add", {"x", "cc"})
      .Op("scaled", "Mul", {"inner", "k"})
      .Op("th", "Tanh", {"scaled"})
      .Op("onep", "Add", {"th", "one"})
      .Op("h", "Mul", {"half", "x"})
      .Op("y", "Mul", {"h", "onep"})
      .Output("y");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeGeluFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "y"), "Gelu");
  EXPECT_EQ(*out.graph->FindNode("y")->attrs().GetString("approximate"),
            "tanh");
  EXPECT_EQ(OpCounts(*out.graph)["Tanh"], 0);
  ExpectSameOutputs(*g, *out.graph,
                                    RandomFeeds(*g, 12));
}

TEST(GeluFusionPassTest, LeavesWrongConstants) {
  GraphMaker m;
  m.Input("x", {4})
      .Const("sqrt3", {1.7320508f}, {})
      .Const("one", {1}, {})
      .Const("half", {0.5f}, {})
      .Op("d", "Div", {"x", "sqrt3"})
      .Op("e", "Erf", {"d"})
      .Op("a", "Add", {"e", "one"})
      .Op("m", "Mul", {"x", "a"})
      .Op("y", "Mul", {"m", "half"})
      .Output("y");
  auto g = m.Build();
  EXPECT_EQ(RunPass(*MakeGeluFusionPass(), *g).graph, nullptr);
}

TEST(GeluFusionPipelineTest, TheFormulasConstantsAreFreed) {
  GraphMaker m;
  m.Input("x", {4, 6})
      .Const("three", {3}, {})
      .Const("c", {0.044715f}, {})
      .Const("k", {0.7978846f}, {})
      .Const("one", {1}, {})
      .Const("half", {0.5f}, {})
      .Op("cube", "Pow", {"x", "three"})
      .Op("cc", "Mul", {"cube", "c"})
      .Op("inner", "Add", {"x", "cc"})
      .Op("scaled", "Mul", {"inner", "k"})
      .Op("th", "Tanh", {"scaled"})
      .Op("onep", "Add", {"th", "one"})
      .Op("h", "Mul", {"half", "x"})
      .Op("y", "Mul", {"h", "onep"})
      .Output("y");
  auto g = m.Build();
  std::map<std::string, std::weak_ptr<Buffer>> constants;
  for (const char* name : {"three", "c", "k", "one", "half"}) {
    constants[name] = ConstBuffer(*g, name);
    ASSERT_FALSE(constants[name].expired()) << name;
  }
  absl::StatusOr<OptimizedGraph> opt =
      OptimizeGraph(std::move(g), OPTIMIZATION_ALL, PassOptions{});
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_EQ(OpOf(*opt->graph, "y"), "Gelu");
  for (const auto& [name, buffer] : constants) {
    EXPECT_TRUE(buffer.expired()) << name;
  }
  auto given = m.Build();
  ExpectSameOutputs(*given, *opt->graph, RandomFeeds(*given, 13));
}

}  // namespace
}  // namespace sluice::optimizer_test::gelu_fusion_test
