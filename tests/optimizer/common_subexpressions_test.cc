#include "gtest/gtest.h"
#include "optimizer/pass.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test {
namespace {

TEST(CommonSubexpressionPassTest, MergesSameOpAttrsAndInputs) {
  GraphMaker m;
  m.Input("x", {2, 3})
      .Const("c1", {1, 2, 3}, {3})
      .Const("c2", {1, 2, 3}, {3})  // same value: merged too
      .Op("a1", "Add", {"x", "c1"})
      .Op("a2", "Add", {"x", "c2"})
      .Op("r1", "ReduceSum", {"a1"}, {{"axes", Ints({1})}})
      .Op("r2", "ReduceSum", {"a2"}, {{"axes", Ints({1})}})
      .Op("r3", "ReduceSum", {"a2"}, {{"axes", Ints({0})}})
      .Op("s", "Add", {"r1", "r2"})
      .Output("s")
      .Output("r3");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeCommonSubexpressionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  // c2, a2 and r2 go; r3 (other axes) stays and now reads a1.
  EXPECT_EQ(OpOf(*out.graph, "c2"), "(none)");
  EXPECT_EQ(OpOf(*out.graph, "a2"), "(none)");
  EXPECT_EQ(OpOf(*out.graph, "r2"), "(none)");
  ASSERT_NE(out.graph->FindNode("r3"), nullptr);
  EXPECT_EQ(out.graph->node(out.graph->FindNode("r3")->input(0).node).name(),
            "a1");
  EXPECT_EQ(OpCounts(*out.graph)["ReduceSum"], 2);
  EXPECT_EQ(out.changes.size(), 3u);
  ExpectSameOutputs(*g, *out.graph,
                                    RandomFeeds(*g, 2));
}

TEST(CommonSubexpressionPassTest, KeepsDifferentAttrsAndGraphOutputs) {
  GraphMaker m;
  m.Input("x", {2, 3})
      .Op("t1", "Transpose", {"x"}, {{"perm", Ints({1, 0})}})
      .Op("t2", "Transpose", {"x"}, {{"perm", Ints({1, 0})}})
      .Op("n1", "Neg", {"x"})
      .Op("n2", "Neg", {"x"})
      .Op("y", "Add", {"t1", "t2"})
      .Output("y")
      .Output("n1")
      .Output("n2");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeCommonSubexpressionPass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "t2"), "(none)");
  // n1 and n2 are both graph outputs: fetchable by their names, kept.
  EXPECT_EQ(OpOf(*out.graph, "n1"), "Neg");
  EXPECT_EQ(OpOf(*out.graph, "n2"), "Neg");
}

}  // namespace
}  // namespace sluice::optimizer_test
