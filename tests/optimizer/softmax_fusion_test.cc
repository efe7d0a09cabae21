#include "gtest/gtest.h"
#include "optimizer/pass.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test::softmax_fusion_test {
namespace {

std::map<std::string, AttrValue> Reduce(int64_t axis) {
  return {{"axes", Ints({axis})}, {"keepdims", MakeBoolAttr(true)}};
}

TEST(SoftmaxFusionPassTest, FusesTheStableAndThePlainForm) {
  GraphMaker m;
  m.Input("x", {3, 4, 5})
      .Op("mx", "ReduceMax", {"x"}, Reduce(1))
      .Op("sh", "Sub", {"x", "mx"})
      .Op("e", "Exp", {"sh"})
      .Op("s", "ReduceSum", {"e"}, Reduce(1))
      .Op("p", "Div", {"e", "s"})
      .Op("e2", "Exp", {"x"})
      .Op("s2", "ReduceSum", {"e2"}, Reduce(-1))
      .Op("p2", "Div", {"e2", "s2"})
      .Output("p")
      .Output("p2");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeSoftmaxFusionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "p"), "Softmax");
  EXPECT_EQ(OpOf(*out.graph, "p2"), "Softmax");
  EXPECT_EQ(*out.graph->FindNode("p")->attrs().GetInt("axis"), 1);
  EXPECT_EQ(*out.graph->FindNode("p2")->attrs().GetInt("axis"), 2);
  EXPECT_EQ(OpCounts(*out.graph)["Exp"], 0);
  ExpectSameOutputs(*g, *out.graph,
                                    RandomFeeds(*g, 13));
}

TEST(SoftmaxFusionPassTest, LeavesMismatchedAxes) {
  GraphMaker m;
  m.Input("x", {3, 4})
      .Op("mx", "ReduceMax", {"x"}, Reduce(0))
      .Op("sh", "Sub", {"x", "mx"})
      .Op("e", "Exp", {"sh"})
      .Op("s", "ReduceSum", {"e"}, Reduce(1))
      .Op("p", "Div", {"e", "s"})
      .Output("p");
  auto g = m.Build();
  EXPECT_EQ(RunPass(*MakeSoftmaxFusionPass(), *g).graph, nullptr);
}

}  // namespace
}  // namespace sluice::optimizer_test::softmax_fusion_test
