#include "gtest/gtest.h"
#include "optimizer/pass.h"
#include "tests/optimizer/optimizer_test_util.h"

namespace sluice::optimizer_test::dead_nodes_test {
namespace {

TEST(DeadNodePassTest, RemovesWhatNoOutputNeeds) {
  GraphMaker m;
  m.Input("x", {2, 3})
      .Input("unused", {4})
      .Op("a", "Relu", {"x"})
      .Op("dead1", "Neg", {"x"})
      .Op("dead2", "Abs", {"dead1"})
      .Op("y", "Exp", {"a"})
      .Output("y");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeDeadNodePass(), *g);
  ASSERT_NE(out.graph, nullptr);
  EXPECT_EQ(OpOf(*out.graph, "dead1"), "(none)");
  EXPECT_EQ(OpOf(*out.graph, "dead2"), "(none)");
  EXPECT_EQ(OpOf(*out.graph, "a"), "Relu");
  // Graph inputs stay, used or not: callers feed them.
  EXPECT_EQ(OpOf(*out.graph, "unused"), "Input");
  EXPECT_EQ(out.graph->inputs().size(), 2u);
  EXPECT_EQ(out.changes.size(), 2u);
  ExpectSameOutputs(*g, *out.graph,
                                    RandomFeeds(*g, 1));
}

TEST(DeadNodePassTest, KeepsControlInputsOfNeededNodes) {
  GraphMaker m;
  m.Input("x", {2})
      .Op("side", "Neg", {"x"})
      .Op("y", "Relu", {"x", "^side"})
      .Output("y");
  auto g = m.Build();
  PassOutput out = RunPass(*MakeDeadNodePass(), *g);
  EXPECT_EQ(out.graph, nullptr) << "nothing is dead";
  EXPECT_TRUE(out.changes.empty());
}

TEST(DeadNodePassTest, EveryOutputOfTheDefaultSignatureIsKept) {
  // With no outputs listed every sink is an output, so nothing is dead.
  GraphMaker m;
  m.Input("x", {2}).Op("a", "Neg", {"x"}).Op("b", "Abs", {"x"});
  auto g = m.Build();
  PassOutput out = RunPass(*MakeDeadNodePass(), *g);
  EXPECT_EQ(out.graph, nullptr);
}

}  // namespace
}  // namespace sluice::optimizer_test::dead_nodes_test
