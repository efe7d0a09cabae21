#include <memory>
#include <utility>

#include "gtest/gtest.h"
#include "optimizer/pass.h"
#include "optimizer/pipeline.h"
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

TEST(DeadNodePipelineTest, AConstantNoOutputNeedsIsFreed) {
  GraphMaker m;
  m.Input("x", {3})
      .Const("c", {1, 2, 3}, {3})
      .Const("unread", {4, 5, 6}, {3})
      .Op("y", "Add", {"x", "c"})
      .Output("y");
  auto g = m.Build();
  std::weak_ptr<Buffer> unread = ConstBuffer(*g, "unread");
  ASSERT_FALSE(unread.expired());
  absl::StatusOr<OptimizedGraph> opt =
      OptimizeGraph(std::move(g), OPTIMIZATION_BASIC, PassOptions{});
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_EQ(OpOf(*opt->graph, "unread"), "(none)");
  EXPECT_TRUE(unread.expired());
}

}  // namespace
}  // namespace sluice::optimizer_test::dead_nodes_test
