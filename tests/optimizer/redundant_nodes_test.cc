#include "gtest/gtest.h"
#include "optimizer/pass.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test::redundant_nodes_test {
namespace {

TEST(RedundantNodePassTest, InverseTransposesAndIdentitiesGo) {
  GraphMaker m;
  m.Input("x", {2, 3, 4})
      .Op("id", "Identity", {"x"})
      .Op("t1", "Transpose", {"id"}, {{"perm", Ints({0, 2, 1})}})
      .Op("t2", "Transpose", {"t1"}, {{"perm", Ints({0, 2, 1})}})
      .Op("y", "Relu", {"t2"})
      .Output("y");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeRedundantNodePass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "id"), "(none)");
  EXPECT_EQ(OpOf(*out.graph, "t2"), "(none)");
  const Node* y = out.graph->FindNode("y");
  EXPECT_EQ(out.graph->node(y->input(0).node).name(), "x");
  // t1 has no reader left; dead_nodes takes it.
  EXPECT_EQ(out.graph->consumers(out.graph->FindNode("t1")->id(), 0).size(),
            0u);
  ExpectSameOutputs(*g, *out.graph,
                                    RandomFeeds(*g, 6));
}

TEST(RedundantNodePassTest, ComposesTransposesAndShortensReshapeChains) {
  GraphMaker m;
  m.Input("x", {2, 3, 4})
      .Op("t1", "Transpose", {"x"}, {{"perm", Ints({1, 0, 2})}})
      .Op("t2", "Transpose", {"t1"}, {{"perm", Ints({2, 0, 1})}})
      .Op("r1", "Reshape", {"x"}, {{"shape", Ints({6, 4})}})
      .Op("u", "Unsqueeze", {"r1"}, {{"axes", Ints({0})}})
      .Op("r2", "Reshape", {"u"}, {{"shape", Ints({4, -1})}})
      .Op("same", "Reshape", {"x"}, {{"shape", Ints({2, 3, 4})}})
      .Output("t2")
      .Output("r2")
      .Output("same");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeRedundantNodePass(), *g);
  ASSERT_NE(out.graph, nullptr);
  const Node* t2 = out.graph->FindNode("t2");
  ASSERT_NE(t2, nullptr);
  EXPECT_EQ(out.graph->node(t2->input(0).node).name(), "x");
  EXPECT_EQ(*t2->attrs().GetIntList("perm"), std::vector<int64_t>({2, 1, 0}));
  const Node* r2 = out.graph->FindNode("r2");
  EXPECT_EQ(out.graph->node(r2->input(0).node).name(), "x");
  // A graph output that does nothing stays, as an Identity of its name.
  EXPECT_EQ(OpOf(*out.graph, "same"), "Identity");
  ExpectSameOutputs(*g, *out.graph,
                                    RandomFeeds(*g, 7));
}

// GPT-2's key/value cache with no past: Concat(K) of one input is K.
TEST(RedundantNodePassTest, ConcatOfOneInputGoes) {
  GraphMaker m;
  m.Input("x", {2, 3})
      .Op("c", "Concat", {"x"}, {{"axis", MakeIntAttr(0)}})
      .Op("y", "Neg", {"c"})
      .Op("two", "Concat", {"x", "x"}, {{"axis", MakeIntAttr(0)}})
      .Output("y")
      .Output("two");
  auto g = m.Build();
  ASSERT_NE(g, nullptr);
  PassOutput out = RunPass(*MakeRedundantNodePass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "c"), "(none)");
  EXPECT_EQ(out.graph->node(out.graph->FindNode("y")->input(0).node).name(), "x");
  EXPECT_EQ(OpOf(*out.graph, "two"), "Concat");
  ExpectSameOutputs(*g, *out.graph, RandomFeeds(*g, 9));
}

TEST(RedundantNodePassTest, KeepsATransposeThatMoves) {
  GraphMaker m;
  m.Input("x", {2, 3}).Op("t", "Transpose", {"x"}).Output("t");
  auto g = m.Build();
  EXPECT_EQ(RunPass(*MakeRedundantNodePass(), *g).graph, nullptr);
}

}  // namespace
}  // namespace sluice::optimizer_test::redundant_nodes_test
